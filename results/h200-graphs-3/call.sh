#!/usr/bin/env bash
# Device call (one H200): GIN graph batches on a ladder of buckets under variant=default-static
# (dynamic=False) with the recompile limit raised to cover the ladder, beside eager, 3 seeds;
# then to_hetero SAGE on the ogbn-mag-size graph in neighbour batches, eager and compiled.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
sweep() {  # name, seconds, overrides...
    local name=$1 limit=$2; shift 2
    timeout "$limit" python -m gnnbench -m "$@" hydra.sweep.dir="/tmp/u/$name" 2>&1 | q > "/tmp/u/$name.log"
    echo "== $name: exit ${PIPESTATUS[0]}"
}
sweep gin-static 200 model=gin workload=synthetic-graphs train.epochs=15 train.warmup_epochs=3 train.shape_policy=buckets variant=eager,default-static train.seed=0,1,2 wandb.mode=disabled data_dir=/tmp/data
sweep mag-neighbor 150 model=sage workload=synthetic-mag train.batching=neighbor train.batch_size=4096 train.epochs=3 train.warmup_epochs=1 variant=eager,default wandb.mode=disabled data_dir=/tmp/data
cp /tmp/u/*.log "$OUT/"
for d in gin-static mag-neighbor; do cp "/tmp/u/$d/report.md" "$OUT/$d-report.md"; done
for d in gin-static mag-neighbor; do echo "== $d"; grep -E "^\| " "/tmp/u/$d/report.md" | cut -d'|' -f2-8 | head -4; grep -A4 "^## Shapes" "/tmp/u/$d/report.md" | tail -3; done
