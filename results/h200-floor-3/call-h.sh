#!/usr/bin/env bash
# Device call (one H200): issue "Performance at the hardware floor". The GPU test of the
# high-priority prefetching stream; the limits benchmark's step part for the best variant
# (its goal with the floor's bound); neighbour batches again, each round with a seed of
# its own (round i: train.seed=i), the best variants only. Run from the repository root
# with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 60 python -m pytest -q -m gpu -p no:cacheprovider -p no:xdist -o addopts="" -rfEs tests/test_prefetch.py > /tmp/u/gpu_tests.log 2>&1
echo "== gpu tests: exit $?"; tail -3 /tmp/u/gpu_tests.log
timeout 100 python -m gnnbench.benchmarks.limits --parts step --rounds 2 --variants "compiled csr-op tf32" \
    --data-dir /tmp/data --out /tmp/u/limits-step.json 2>&1 | q > /tmp/u/limits-step.log
echo "== limits step: exit ${PIPESTATUS[0]}"; grep -E "^step" /tmp/u/limits-step.log
timeout 100 python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/arxiv-size --rounds 3 \
    --variants "compiled tf32 padded prefetch high,eager tf32 prefetch high" \
    --data-dir /tmp/data --out /tmp/u/limits-arxiv-seeds.json 2>&1 | q > /tmp/u/limits-arxiv-seeds.log
echo "== limits arxiv seeds: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-arxiv-seeds.log
timeout 260 python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/products-size --rounds 3 \
    --variants "compiled tf32 prefetch high" \
    --data-dir /tmp/data --out /tmp/u/limits-products-seeds.json 2>&1 | q > /tmp/u/limits-products-seeds.log
echo "== limits products seeds: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-products-seeds.log
cp /tmp/u/*.log /tmp/u/*.json "$OUT/"
