#!/usr/bin/env bash
# Device call 1 (one H200): the GPU tests, then the whole-epoch part of the limits benchmark.
# Run from the repository root with the carried wheels (hydra-core, omegaconf, antlr4, ogb...)
# installed into /tmp/site; outputs go to $OUT.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  python -c "import sys, torch, torch_geometric, hydra, omegaconf, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'pyg', torch_geometric.__version__, 'hydra', hydra.__version__, 'omegaconf', omegaconf.__version__, 'triton', triton.__version__)"
  nproc; } > "$OUT/env.txt" 2>&1
timeout 290 python -m pytest -q -m gpu -p no:cacheprovider --timeout=120 -rfEs tests > "$OUT/gpu_tests.log" 2>&1
timeout 250 python -m gnnbench.benchmarks.limits --parts epoch --rounds 2 --data-dir /tmp/data --out "$OUT/limits-epoch.json" > "$OUT/limits-epoch.log" 2>&1
tail -5 "$OUT/gpu_tests.log"; cat "$OUT/limits-epoch.log" | grep -v "^\[" | tail -12
