#!/usr/bin/env bash
# Device call 4 (one H200): neighbour-batched training on the products-size graph, compiled
# against eager, GCN and SAGE (the reference sweep's products rows, one seed), one process.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data
timeout 280 python -m gnnbench -m workload=synthetic-products model=gcn,sage variant=eager,default \
  train.seed=0 wandb.mode=disabled data_dir=/tmp/data hydra.sweep.dir=/tmp/products-minibatch \
  2>&1 | grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " > "$OUT/products-minibatch.log"
tar czf "$OUT/products-minibatch.tgz" -C /tmp products-minibatch
grep -E "^\| (gcn|sage) " /tmp/products-minibatch/report.md | cut -c1-200
