#!/usr/bin/env bash
# Device call 7 (2 H200s, GPU pool): GIN's column of the arxiv-size matrix again, after GIN
# got batch norm inside its MLPs where the model uses batch norm (model.mlp_norm): call6's
# GIN rows (plain MLP) stayed near chance accuracy. 18 runs, one seed.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data
nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv > "$OUT/env-7.txt"
timeout 330 python -m gnnbench -m hydra/launcher=gpu-pool experiment=matrix model=gin \
  workload=synthetic-arxiv wandb.mode=disabled data_dir=/tmp/data \
  hydra.sweep.dir=/tmp/matrix-arxiv-gin > /tmp/matrix-arxiv-gin.log 2>&1
echo "sweep exit $?" >> /tmp/matrix-arxiv-gin.log
tar czf "$OUT/matrix7.tgz" -C /tmp matrix-arxiv-gin matrix-arxiv-gin.log
tail -2 /tmp/matrix-arxiv-gin.log; grep -i "wall\|Records" /tmp/matrix-arxiv-gin/report.md
grep -E "^\| gin " /tmp/matrix-arxiv-gin/report.md | cut -d'|' -f2-9,16,19 | head -20
