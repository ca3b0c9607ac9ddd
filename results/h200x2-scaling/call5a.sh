#!/usr/bin/env bash
# Device call 5a (2 H200s): DDP products-size SAGE on 1 and 2 GPUs, eager, seeds 0,1,2 (the
# three seeds the scale-out issue asks for; call.sh ran one). Outputs to $OUT as ddp3-eager.tgz.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
D=/tmp/x2; mkdir -p $D /tmp/data
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv > "$OUT/env-5a.txt"
timeout 90 python -m gnnbench experiment=synthetic-products-sage train.epochs=1 train.warmup_epochs=0 wandb.mode=disabled data_dir=/tmp/data hydra.run.dir=$D/warm > $D/warm.log 2>&1
COMMON="experiment=synthetic-products-sage train.distributed=ddp train.world_size=1,2 train.seed=0,1,2 train.epochs=4 train.warmup_epochs=1 wandb.mode=disabled data_dir=/tmp/data"
timeout 440 python -m gnnbench -m $COMMON hydra.sweep.dir=$D/ddp3-eager 2>&1 | q > $D/ddp3-eager.log
tar czf "$OUT/ddp3-eager.tgz" -C $D ddp3-eager ddp3-eager.log warm.log
grep -i "wall" $D/ddp3-eager/report.md; grep -E "^\| sage" $D/ddp3-eager/report.md | head -8
