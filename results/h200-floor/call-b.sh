#!/usr/bin/env bash
# Device call B (one H200): issue "Performance at the hardware floor". The limits
# benchmark's arxiv-size train step (eager COO; compiled whole step with cuSPARSE CSR +
# TF32; with gnnbench's Triton CSR kernel in fp32, TF32 and bf16), 2 rounds, and its
# neighbour-batch part, 2 rounds; the SpMM kernel configuration sweep.
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 330 python -m gnnbench.benchmarks.limits --parts step --rounds 2 --data-dir /tmp/data --out /tmp/u/limits-step.json 2>&1 | q > /tmp/u/limits-step.log
echo "== limits step: exit ${PIPESTATUS[0]}"; grep -E "^step" /tmp/u/limits-step.log
timeout 200 python -m gnnbench.benchmarks.limits --parts minibatch --rounds 2 --data-dir /tmp/data --out /tmp/u/limits-minibatch.json 2>&1 | q > /tmp/u/limits-minibatch.log
echo "== limits minibatch: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-minibatch.log
timeout 150 python -m gnnbench.benchmarks.spmm --sweep --out /tmp/u/spmm-sweep.json 2>&1 | q > /tmp/u/spmm-sweep.log
echo "== spmm sweep: exit ${PIPESTATUS[0]}"; tail -15 /tmp/u/spmm-sweep.log
cp /tmp/u/*.log /tmp/u/*.json "$OUT/"
