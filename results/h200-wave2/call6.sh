#!/usr/bin/env bash
# Device call 6 (2 H200s, GPU pool): the rest of the matrix preset. On the arxiv-size graph
# every model x {fp32, tf32, bf16} x {coo, csr, edge_index} x {eager, compile-default}
# (72 runs), and on Cora the TF32 column call3.sh left out (24 runs, 100 epochs as there);
# one seed; each job alone on one of the two GPUs (its record names which). Sweep folders
# come back as a tarball.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data
nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv > "$OUT/env-6.txt"
COMMON="hydra/launcher=gpu-pool experiment=matrix wandb.mode=disabled data_dir=/tmp/data"
timeout 120 python -m gnnbench -m $COMMON workload=cora train.precision=tf32 train.epochs=100 \
  hydra.sweep.dir=/tmp/matrix-cora-tf32 > /tmp/matrix-cora-tf32.log 2>&1
echo "sweep exit $?" >> /tmp/matrix-cora-tf32.log
timeout 400 python -m gnnbench -m $COMMON workload=synthetic-arxiv \
  hydra.sweep.dir=/tmp/matrix-arxiv > /tmp/matrix-arxiv.log 2>&1
echo "sweep exit $?" >> /tmp/matrix-arxiv.log
tar czf "$OUT/matrix6.tgz" -C /tmp matrix-cora-tf32 matrix-cora-tf32.log matrix-arxiv matrix-arxiv.log
for d in matrix-cora-tf32 matrix-arxiv; do tail -2 /tmp/$d.log; grep -i "wall\|Records" /tmp/$d/report.md
  grep -E "^\| (gcn|sage|gat|gin) " /tmp/$d/report.md | cut -d'|' -f2-7,19 | head -40; done
