#!/usr/bin/env bash
# Device call C (one H200): what compiling costs on the arxiv-size graph and on the deep
# preset, and the arxiv-size step again with the swept csr-triton tiles.
# 1. experiment=deep-sage (12-layer residual SAGE, arxiv-size graph), 20 epochs: eager and
#    compiled with compiler.scope=model,layers,nested x compiler.cache=cold,portable.
# 2. GCN and SAGE 3x256 on the arxiv-size graph, 20 epochs: eager and compiled with
#    compiler.cache=cold,warm,portable.
# 3. python -m gnnbench.benchmarks.limits --parts step --rounds 2 (results/h200-floor).
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
C="wandb.mode=disabled data_dir=/tmp/data train.epochs=20"
sweep() {  # name, seconds, overrides...
    local name=$1 limit=$2; shift 2
    timeout "$limit" python -m gnnbench -m "$@" hydra.sweep.dir="/tmp/u/$name" 2>&1 | q > "/tmp/u/$name.log"
    echo "== $name: exit ${PIPESTATUS[0]}"
}
# shellcheck disable=SC2086
sweep deep-scope 220 experiment=deep-sage compile=false,true compiler.scope=model,layers,nested compiler.cache=cold,portable $C
# shellcheck disable=SC2086
sweep arxiv-cache 180 workload=synthetic-arxiv model=gcn,sage compile=false,true compiler.cache=cold,warm,portable $C
timeout 170 python -m gnnbench.benchmarks.limits --parts step --rounds 2 --data-dir /tmp/data --out /tmp/u/limits-step-tuned.json 2>&1 | q > /tmp/u/limits-step-tuned.log
echo "== limits step: exit ${PIPESTATUS[0]}"; grep -E "^step" /tmp/u/limits-step-tuned.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/u/env.txt
python -c "import torch, torch_geometric; print('torch', torch.__version__, 'PyG', torch_geometric.__version__)" >> /tmp/u/env.txt
cp /tmp/u/*.log /tmp/u/env.txt /tmp/u/limits-step-tuned.json "$OUT/"
tar czf "$OUT/sweeps.tgz" -C /tmp/u deep-scope arxiv-cache
for d in deep-scope arxiv-cache; do
    echo "== $d"; sed -n '/Compile cost by cache state/,/^## Runs/p' "/tmp/u/$d/report.md" 2>/dev/null | grep "^| " | head -20
done
