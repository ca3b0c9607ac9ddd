#!/usr/bin/env bash
# Device call (one H200): the GPU tests after the interval-over-runs change, then the user's
# command as a sweep of three seeds a side, Cora SAGE and GCN, eager and compile=true, with
# its report (intervals over runs, per-run ratios, end-to-end, measured pay-back).
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  python -c "import sys, torch, torch_geometric, hydra, omegaconf, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'pyg', torch_geometric.__version__, 'hydra', hydra.__version__, 'omegaconf', omegaconf.__version__, 'triton', triton.__version__)"
  nproc; } > "$OUT/env.txt" 2>&1
timeout 300 python -m pytest -q -m gpu -p no:cacheprovider --timeout=120 -rfEs tests > "$OUT/gpu_tests.log" 2>&1
timeout 240 python -m gnnbench -m model=sage,gcn dataset=cora compile=false,true train.seed=0,1,2 \
    wandb.mode=disabled data_dir=/tmp/data hydra.sweep.dir=/tmp/u/cora-seeds 2>&1 | q > /tmp/u/cora-seeds.log
cp /tmp/u/cora-seeds.log "$OUT/"
tar czf "$OUT/cora-seeds.tgz" -C /tmp/u cora-seeds
tail -3 "$OUT/gpu_tests.log"; grep -E "=>|note:|warning: reference" /tmp/u/cora-seeds.log | head -20
grep -E "^\| (sage|gcn) " /tmp/u/cora-seeds/report.md | cut -d'|' -f2-8
