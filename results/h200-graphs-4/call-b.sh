#!/usr/bin/env bash
# Device call (one H200): GIN graph batches on static buckets, collated ahead by DataLoader
# workers (train.prefetch=true), eager against reduce-overhead, 3 seeds; then to_hetero
# SAGE full batch on the ogbn-mag-size graph, eager, default-static (dynamic=False) and
# reduce-overhead-static, 3 seeds.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
sweep() {  # name, seconds, overrides...
    local name=$1 limit=$2; shift 2
    timeout "$limit" python -m gnnbench -m "$@" wandb.mode=disabled data_dir=/tmp/data \
        hydra.sweep.dir="/tmp/u/$name" 2>&1 | q > "/tmp/u/$name.log"
    echo "== $name: exit ${PIPESTATUS[0]}"
    tar czf "$OUT/$name.tgz" --exclude='*.png' -C /tmp/u "$name" "$name.log"
    grep -E "^\| " "/tmp/u/$name/report.md" | cut -d'|' -f2-9,18-21 | head -5
    grep -A6 "^## Shapes" "/tmp/u/$name/report.md" | tail -3 | cut -d'|' -f4,6-11
}
sweep gin-prefetch 200 model=gin workload=synthetic-graphs train.epochs=15 train.warmup_epochs=3 \
    train.shape_policy=buckets train.prefetch=true variant=eager,reduce-overhead-static train.seed=0,1,2
sweep mag-static 220 model=sage workload=synthetic-mag train.epochs=15 train.warmup_epochs=3 \
    variant=eager,default-static,reduce-overhead-static train.seed=0,1,2
