#!/usr/bin/env bash
# Device call D (one H200): the deep preset's nested-region compile (call C's sweep ran out
# of time in it), eager beside it; then GIN graph batches with buckets under
# variant=default-static (dynamic=false), 3 seeds, beside eager (results/h200-graphs).
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
sweep() {  # name, seconds, overrides...
    local name=$1 limit=$2; shift 2
    timeout "$limit" python -m gnnbench -m "$@" hydra.sweep.dir="/tmp/u/$name" 2>&1 | q > "/tmp/u/$name.log"
    echo "== $name: exit ${PIPESTATUS[0]}"
}
sweep deep-nested 260 experiment=deep-sage compile=false,true compiler.scope=nested compiler.cache=cold wandb.mode=disabled data_dir=/tmp/data train.epochs=20
sweep gin-static 200 model=gin workload=synthetic-graphs train.epochs=15 train.warmup_epochs=3 train.shape_policy=buckets variant=eager,default-static train.seed=0,1,2 wandb.mode=disabled data_dir=/tmp/data
cp /tmp/u/*.log "$OUT/"
for d in deep-nested gin-static; do cp "/tmp/u/$d/report.md" "$OUT/$d-report.md"; done
sed -n '/Compile cost by cache state/,/^## Runs/p' /tmp/u/deep-nested/report.md | grep "^| "
grep -E "^\| " /tmp/u/gin-static/report.md | cut -d'|' -f2-9 | head -6
