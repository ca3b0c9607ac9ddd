#!/usr/bin/env bash
# Device call (one H200): issue "Performance at the hardware floor". The limits benchmark's
# neighbour batches with the sampler's stream at high priority and TF32: arxiv-size with
# the step on padded buckets under CUDA graphs (the host left to the sampler), then
# products-size; each best compiled variant against eager, and over its eager control.
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 110 python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/arxiv-size --rounds 3 \
    --variants "compiled tf32 prefetch high,compiled tf32 padded prefetch high,eager tf32 prefetch high" \
    --data-dir /tmp/data --out /tmp/u/limits-arxiv-tf32.json 2>&1 | q > /tmp/u/limits-arxiv-tf32.log
echo "== limits arxiv tf32: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-arxiv-tf32.log
timeout 440 python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/products-size --rounds 3 \
    --variants "compiled prefetch high,compiled tf32 prefetch high,eager tf32 prefetch high" \
    --data-dir /tmp/data --out /tmp/u/limits-products.json 2>&1 | q > /tmp/u/limits-products.log
echo "== limits products: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-products.log
cp /tmp/u/*.log /tmp/u/*.json "$OUT/"
