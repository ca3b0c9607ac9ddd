#!/usr/bin/env bash
# Device call (one H200): issue "Performance at the hardware floor". What bounds an
# arxiv-size neighbour-batch epoch: the kernel profile of one batch's step (eager,
# compiled, compiled TF32) beside sampling and gathering a batch on their own; then the
# limits benchmark's arxiv-size neighbour batches with the sampler's stream at normal and
# high priority (3 rounds); then the products-size step's profile. Run from the repository
# root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 120 python -m gnnbench.benchmarks.profile_step --cases "workload=synthetic-arxiv train.batching=neighbor train.fanouts=[15,10,5] model.batch_norm=false" \
    --models sage --variants "eager,compiled,compiled tf32" --steps 20 --warmup 10 --data-dir /tmp/data \
    --out /tmp/u/profile-arxiv-batches.json 2>&1 | q > /tmp/u/profile-arxiv-batches.log
echo "== profile arxiv batches: exit ${PIPESTATUS[0]}"; grep -v "^      " /tmp/u/profile-arxiv-batches.log | tail -24
timeout 230 python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/arxiv-size --rounds 3 \
    --variants "compiled prefetch,compiled prefetch high,compiled padded prefetch,compiled padded prefetch high,compiled tf32 prefetch high,eager tf32 prefetch high" \
    --data-dir /tmp/data --out /tmp/u/limits-arxiv-priority.json 2>&1 | q > /tmp/u/limits-arxiv-priority.log
echo "== limits arxiv priority: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-arxiv-priority.log
timeout 150 python -m gnnbench.benchmarks.profile_step --cases "workload=synthetic-products" \
    --models sage --variants "eager,compiled tf32" --steps 10 --warmup 5 --data-dir /tmp/data \
    --out /tmp/u/profile-products-batches.json 2>&1 | q > /tmp/u/profile-products-batches.log
echo "== profile products batches: exit ${PIPESTATUS[0]}"; grep -v "^      " /tmp/u/profile-products-batches.log | tail -16
cp /tmp/u/*.log /tmp/u/*.json "$OUT/"
