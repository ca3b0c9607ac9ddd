#!/usr/bin/env bash
# Device call (one H200): what compiling costs by cache state and by scope, and serving
# latency. GCN and SAGE on Cora, eager and compiled with compiler.cache=cold,warm,portable
# (30 epochs); the 12-layer residual SAGE of experiment=deep-sage on the arxiv-size graph,
# eager and compiled cold with compiler.scope=model,layers (20 epochs); then
# `python -m gnnbench.serve` for SAGE on Cora (batch sizes 1, 16, 256, 4096; eager,
# compiled, reduce-overhead, padded).
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
C="wandb.mode=disabled data_dir=/tmp/data"
sweep() {  # name, seconds, overrides...
    local name=$1 limit=$2; shift 2
    timeout "$limit" python -m gnnbench -m "$@" hydra.sweep.dir="/tmp/u/$name" 2>&1 | q > "/tmp/u/$name.log"
    echo "== $name: exit ${PIPESTATUS[0]}"
}
# shellcheck disable=SC2086
sweep cora-cache 200 model=gcn,sage dataset=cora train.epochs=30 compile=false,true compiler.cache=cold,warm,portable $C
# shellcheck disable=SC2086
sweep deep-scope 200 experiment=deep-sage train.epochs=20 compile=false,true compiler.scope=model,layers compiler.cache=cold $C
timeout 100 python -m gnnbench.serve model=sage dataset=cora $C hydra.run.dir=/tmp/u/serve-cora 2>&1 | q > /tmp/u/serve-cora.log
echo "== serve-cora: exit ${PIPESTATUS[0]}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/u/env.txt
python -c "import torch, torch_geometric; print('torch', torch.__version__, 'PyG', torch_geometric.__version__)" >> /tmp/u/env.txt
cp /tmp/u/*.log /tmp/u/env.txt "$OUT/"
tar czf "$OUT/sweeps.tgz" -C /tmp/u cora-cache deep-scope serve-cora
for d in cora-cache deep-scope; do
    echo "== $d"; sed -n '/Compile cost by cache state/,/^$/p' "/tmp/u/$d/report.md" 2>/dev/null | head -20
done
tail -30 /tmp/u/serve-cora.log
