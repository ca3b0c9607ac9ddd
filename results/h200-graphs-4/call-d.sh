#!/usr/bin/env bash
# Device call (one H200): GIN graph batches on static buckets with train.prefetch=true
# again, after the loader's workers shared tensors through files and lost the pin thread
# (call-b.sh's run timed out, its prefetching slower than none), eager against
# reduce-overhead, 3 seeds.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
name=gin-prefetch-2
timeout 200 python -m gnnbench -m model=gin workload=synthetic-graphs train.epochs=15 \
    train.warmup_epochs=3 train.shape_policy=buckets train.prefetch=true \
    variant=eager,reduce-overhead-static train.seed=0,1,2 wandb.mode=disabled \
    data_dir=/tmp/data hydra.sweep.dir="/tmp/u/$name" 2>&1 \
    | grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " > "/tmp/u/$name.log"
echo "== $name: exit ${PIPESTATUS[0]}"
tar czf "$OUT/$name.tgz" --exclude='*.png' -C /tmp/u "$name" "$name.log"
grep -E "per epoch" "/tmp/u/$name.log"
grep -E "^\| " "/tmp/u/$name/report.md" | cut -d'|' -f4-8 | head -4
grep -A6 "^## Shapes" "/tmp/u/$name/report.md" | tail -2 | cut -d'|' -f4,11
