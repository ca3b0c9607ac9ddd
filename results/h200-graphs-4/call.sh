#!/usr/bin/env bash
# Device call (one H200): GIN graph batches on a ladder of buckets under
# variant=reduce-overhead-static (dynamic=False, CUDA graphs, one recording per rung) with
# the recompile limit raised to cover the ladder, beside eager, 3 seeds.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 230 python -m gnnbench -m model=gin workload=synthetic-graphs train.epochs=15 \
    train.warmup_epochs=3 train.shape_policy=buckets variant=eager,reduce-overhead-static \
    train.seed=0,1,2 wandb.mode=disabled data_dir=/tmp/data hydra.sweep.dir=/tmp/u/gin-ro \
    2>&1 | q > /tmp/u/gin-ro.log
echo "== gin-ro: exit ${PIPESTATUS[0]}"
cp /tmp/u/gin-ro.log "$OUT/"; cp /tmp/u/gin-ro/report.md "$OUT/gin-ro-report.md"
tar czf "$OUT/gin-ro-records.tgz" -C /tmp/u gin-ro --exclude='*.png' --exclude='wandb'
grep -E "^\| " /tmp/u/gin-ro/report.md | cut -d'|' -f2-9,18-21 | head -4
grep -A4 "^## Shapes" /tmp/u/gin-ro/report.md | tail -2
grep -E "compute|sampling" /tmp/u/gin-ro.log | head -8
