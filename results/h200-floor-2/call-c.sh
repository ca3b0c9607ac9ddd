#!/usr/bin/env bash
# Device call (one H200): issue "Performance at the hardware floor". The kernel profile of
# the final step (arxiv-size GCN and SAGE 3x256, eager COO against the compiled whole step
# on the cuSPARSE CSR op with TF32) with each row's floor from bytes moved; then the limits
# benchmark's products-size neighbour batches (eager, compiled, padded + prefetch), 2 rounds.
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 220 python -m gnnbench.benchmarks.profile_step --cases experiment=synthetic-arxiv-gcn \
    --models gcn,sage --variants "eager,step csr-op tf32" --data-dir /tmp/data \
    --out /tmp/u/profile-final.json 2>&1 | q > /tmp/u/profile-final.log
echo "== profile: exit ${PIPESTATUS[0]}"; grep -v "^    " /tmp/u/profile-final.log | tail -12
timeout 330 python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/products-size \
    --rounds 2 --data-dir /tmp/data --out /tmp/u/limits-products.json 2>&1 | q > /tmp/u/limits-products.log
echo "== limits products: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-products.log
cp /tmp/u/*.log /tmp/u/*.json "$OUT/"
