#!/usr/bin/env bash
# Device call (one H200): gnnbench's layer stacks beside PyG's stock models, eager and the
# whole step compiled (variant=whole-step: forward, backward and Adam as one CUDA graph),
# three seeds, on Cora (200 epochs) or on the ogbn-arxiv-size synthetic graph (100 epochs;
# every model with its Cora set-up). Usage: call.sh cora|arxiv
# Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
MODELS=gcn,sage,gat,gin,pyg-gcn,pyg-sage,pyg-gat,pyg-gin,pyg-edgecnn
case "$1" in
  cora) DATA="dataset=cora" ;;
  arxiv) DATA="dataset=synthetic-arxiv train.epochs=100" ;;
esac
# shellcheck disable=SC2086
timeout "${2:-500}" python -m gnnbench -m model=$MODELS $DATA variant=eager,whole-step \
    train.seed=0,1,2 wandb.mode=disabled data_dir=/tmp/data hydra.sweep.dir="/tmp/u/$1" \
    2>&1 | q > "/tmp/u/$1.log"
cp "/tmp/u/$1.log" "$OUT/"
tar czf "$OUT/$1.tgz" -C /tmp/u "$1"
grep -E "^\| " "/tmp/u/$1/report.md" | cut -d'|' -f2-9 | head -40
