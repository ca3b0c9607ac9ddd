#!/usr/bin/env bash
# Device call (one H200): issue "Performance at the hardware floor". The limits benchmark's
# arxiv-size neighbour batches (every variant, 3 rounds) and whole epochs on Cora (3 rounds
# of 210 epochs), each goal with its bound. Run from the repository root with the carried
# wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/u/env.txt
python -c "import torch, torch_geometric, triton; print(torch.__version__, torch_geometric.__version__, triton.__version__)" >> /tmp/u/env.txt
timeout 250 python -m gnnbench.benchmarks.limits --parts minibatch --settings sage/arxiv-size \
    --rounds 3 --data-dir /tmp/data --out /tmp/u/limits-arxiv.json 2>&1 | q > /tmp/u/limits-arxiv.log
echo "== limits arxiv: exit ${PIPESTATUS[0]}"; grep -E "^minibatch" /tmp/u/limits-arxiv.log
timeout 250 python -m gnnbench.benchmarks.limits --parts epoch --rounds 3 --data-dir /tmp/data \
    --out /tmp/u/limits-epoch.json 2>&1 | q > /tmp/u/limits-epoch.log
echo "== limits epoch: exit ${PIPESTATUS[0]}"; grep -E "^epoch" /tmp/u/limits-epoch.log
cp /tmp/u/*.log /tmp/u/*.json /tmp/u/env.txt "$OUT/"
