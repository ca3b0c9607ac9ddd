#!/usr/bin/env bash
# Device call (one H200): batches of whole graphs and a heterogeneous graph, eager against
# each compiled strategy. GIN (Xu et al.'s 5x64, sum pooling) on the molhiv-like synthetic
# graphs in batches of 128, 15 epochs (3 warm-up): shape policy buckets {eager, default
# (dynamic=true), reduce-overhead with dynamic=false} and exact {eager, default} x 3 seeds,
# and exact reduce-overhead (dynamic=true: a CUDA graph per shape) once. to_hetero(GraphSAGE)
# on the ogbn-mag-size synthetic graph, full batch, 15 epochs: {eager, default} x 3 seeds.
# (Static exact shapes stop at dynamo's recompile limit: tests/test_graph_batches.py.)
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
G="model=gin workload=synthetic-graphs train.epochs=15 train.warmup_epochs=3 wandb.mode=disabled data_dir=/tmp/data"
sweep() {  # name, seconds, overrides...
    local name=$1 limit=$2; shift 2
    timeout "$limit" python -m gnnbench -m "$@" hydra.sweep.dir="/tmp/u/$name" 2>&1 | q > "/tmp/u/$name.log"
    echo "== $name: exit ${PIPESTATUS[0]}"
}
# shellcheck disable=SC2086
sweep gin-buckets 230 $G train.shape_policy=buckets variant=eager,default,reduce-overhead-static train.seed=0,1,2
# shellcheck disable=SC2086
sweep gin-exact 150 $G train.shape_policy=exact variant=eager,default train.seed=0,1,2
# shellcheck disable=SC2086
sweep gin-exact-ro 60 $G train.shape_policy=exact variant=reduce-overhead train.seed=0 "reference_dirs=[/tmp/u/gin-exact]"
H="model=sage workload=synthetic-mag train.epochs=15 train.warmup_epochs=3 wandb.mode=disabled data_dir=/tmp/data"
# shellcheck disable=SC2086
sweep mag-sage 100 $H variant=eager,default train.seed=0,1,2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > /tmp/u/env.txt
python -c "import torch, torch_geometric; print('torch', torch.__version__, 'PyG', torch_geometric.__version__)" >> /tmp/u/env.txt
cp /tmp/u/*.log /tmp/u/env.txt "$OUT/"
tar czf "$OUT/sweeps.tgz" -C /tmp/u gin-buckets gin-exact gin-exact-ro mag-sage
for d in gin-buckets gin-exact gin-exact-ro mag-sage; do
    echo "== $d"; grep -E "^\| " "/tmp/u/$d/report.md" 2>/dev/null | cut -d'|' -f2-9 | head -12
done
