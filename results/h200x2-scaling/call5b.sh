#!/usr/bin/env bash
# Device call 5b (2 H200s): the compiled twin of call5a (seeds 0,1,2, 1 and 2 GPUs), compared
# with call5a's eager records (carried in results/h200x2-scaling/ddp3-eager), then the report
# over both folders. Outputs to $OUT as ddp3-compiled.tgz.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
D=/tmp/x2; R=results/h200x2-scaling; mkdir -p $D /tmp/data
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv > "$OUT/env-5b.txt"
timeout 90 python -m gnnbench experiment=synthetic-products-sage train.epochs=1 train.warmup_epochs=0 wandb.mode=disabled data_dir=/tmp/data hydra.run.dir=$D/warm > $D/warm.log 2>&1
COMMON="experiment=synthetic-products-sage train.distributed=ddp train.world_size=1,2 train.seed=0,1,2 train.epochs=4 train.warmup_epochs=1 wandb.mode=disabled data_dir=/tmp/data"
timeout 470 python -m gnnbench -m $COMMON compile=true compiler.fullgraph=false reference_dirs=[$R/ddp3-eager] hydra.sweep.dir=$D/ddp3-compiled 2>&1 | q > $D/ddp3-compiled.log
python -m gnnbench.report $R/ddp3-eager $D/ddp3-compiled --out $D/ddp3 --no-wandb > $D/ddp3-report.log 2>&1
tar czf "$OUT/ddp3-compiled.tgz" -C $D ddp3-compiled ddp3-compiled.log ddp3 ddp3-report.log
grep -i -A12 "Scaling" $D/ddp3/report.md | head -30
