#!/usr/bin/env bash
# Device call A (one H200): issue "Performance at the hardware floor". The GPU tests of the
# Triton CSR kernel (csr-triton) and of multi-epoch capture (compiler.capture_epochs); the
# SpMM benchmark (csr-triton against cuSPARSE and PyG's scatter, arxiv-size, fp32/bf16);
# the whole-epoch part of the limits benchmark, 3 rounds.
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 200 python -m pytest -q -m gpu -p no:cacheprovider -rfEs tests/test_csr_triton.py tests/test_whole_epoch.py 2>&1 | q > /tmp/u/gpu_tests.log
echo "== gpu tests: exit ${PIPESTATUS[0]}"; tail -5 /tmp/u/gpu_tests.log
timeout 120 python -m gnnbench.benchmarks.spmm --out /tmp/u/spmm.json 2>&1 | q > /tmp/u/spmm.log
echo "== spmm: exit ${PIPESTATUS[0]}"; cat /tmp/u/spmm.log | tail -30
timeout 220 python -m gnnbench.benchmarks.limits --parts epoch --rounds 3 --data-dir /tmp/data --out /tmp/u/limits-epoch.json 2>&1 | q > /tmp/u/limits-epoch.log
echo "== limits epoch: exit ${PIPESTATUS[0]}"; grep -E "^epoch" /tmp/u/limits-epoch.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/u/env.txt
python -c "import torch, torch_geometric, triton; print('torch', torch.__version__, 'PyG', torch_geometric.__version__, 'triton', triton.__version__)" >> /tmp/u/env.txt
cp /tmp/u/*.log /tmp/u/*.json /tmp/u/env.txt "$OUT/"
