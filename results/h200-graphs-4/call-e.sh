#!/usr/bin/env bash
# Device call (one H200): three more seeds (3, 4, 5) of call-d.sh's sweep, GIN on static
# buckets with train.prefetch=true, eager against reduce-overhead; the report over both
# folders has six runs a side.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
name=gin-prefetch-3
timeout 200 python -m gnnbench -m model=gin workload=synthetic-graphs train.epochs=15 \
    train.warmup_epochs=3 train.shape_policy=buckets train.prefetch=true \
    variant=eager,reduce-overhead-static train.seed=3,4,5 wandb.mode=disabled \
    data_dir=/tmp/data hydra.sweep.dir="/tmp/u/$name" 2>&1 \
    | grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " > "/tmp/u/$name.log"
echo "== $name: exit ${PIPESTATUS[0]}"
tar czf "$OUT/$name.tgz" --exclude='*.png' -C /tmp/u "$name" "$name.log"
grep -E "^\| " "/tmp/u/$name/report.md" | cut -d'|' -f4-8 | head -4
