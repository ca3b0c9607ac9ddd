#!/usr/bin/env bash
# Device call 3 (one H200): the matrix preset on Cora (100 epochs): every model x fp32/bf16 x
# every PyG layout x eager/compiled, one seed; the sweep folder comes back as a tarball.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data
timeout 400 python -m gnnbench -m experiment=matrix workload=cora train.precision=fp32,bf16 \
  train.epochs=100 wandb.mode=disabled data_dir=/tmp/data hydra.sweep.dir=/tmp/matrix-cora \
  > "$OUT/matrix-cora.log" 2>&1
echo "sweep exit $?" >> "$OUT/matrix-cora.log"
tar czf "$OUT/matrix-cora.tgz" -C /tmp matrix-cora
grep -E "^\| (gcn|sage|gat|gin) " /tmp/matrix-cora/report.md | cut -c1-230 | head -60
