#!/usr/bin/env bash
# Device call (one H200): where a served request's time goes (split.py: sampling against
# answering, and a profile of the eager and compiled answers at 16 seeds), then
# `python -m gnnbench.serve` for SAGE on Cora with every bucket shape warmed before timing
# (the padded variant) and 1,000 timed requests per case.
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 120 python results/h200-serving/split.py /tmp/data 2>&1 | q > /tmp/u/split.log
echo "== split: exit ${PIPESTATUS[0]}"
timeout 200 python -m gnnbench.serve model=sage dataset=cora serve.requests=1000 \
    wandb.mode=disabled data_dir=/tmp/data 2>&1 | q > /tmp/u/serve-cora.log
echo "== serve-cora: exit ${PIPESTATUS[0]}"
cp outputs/serve/*/results.json /tmp/u/serve-cora.json 2>/dev/null
cp /tmp/u/split.log /tmp/u/serve-cora.log /tmp/u/serve-cora.json "$OUT/"
grep -v "^ \|^-\|Name\|^$" /tmp/u/split.log | head -30
tail -18 /tmp/u/serve-cora.log
