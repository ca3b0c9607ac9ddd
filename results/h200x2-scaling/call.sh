#!/usr/bin/env bash
# The one device call made on a host with 2 H200s (device time allowed one call): the GPU
# paths, DDP products-size SAGE on 1 and 2 GPUs eager and compiled (one seed, as the time
# allowed), and the GPU pool against one GPU on the same 12-job sweep. Outputs to $OUT.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
D=/tmp/x2; mkdir -p $D /tmp/data
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
nvidia-smi --query-gpu=index,name,uuid,driver_version,memory.total --format=csv > "$OUT/env.txt"
timeout 150 python -m pytest -q -m gpu -p no:cacheprovider --timeout=100 -rfEs tests/test_distributed.py tests/test_scale_out.py tests/test_devices.py > "$OUT/gpu_tests.log" 2>&1
timeout 60 python -m gnnbench experiment=synthetic-products-sage train.epochs=1 train.warmup_epochs=0 wandb.mode=disabled data_dir=/tmp/data hydra.run.dir=$D/warm > $D/warm.log 2>&1
COMMON="experiment=synthetic-products-sage train.distributed=ddp train.world_size=1,2 train.seed=0 train.epochs=4 train.warmup_epochs=1 wandb.mode=disabled data_dir=/tmp/data"
timeout 120 python -m gnnbench -m $COMMON hydra.sweep.dir=$D/ddp-eager 2>&1 | q > $D/ddp-eager.log
timeout 170 python -m gnnbench -m $COMMON compile=true compiler.fullgraph=false reference_dirs=[$D/ddp-eager] hydra.sweep.dir=$D/ddp-compiled 2>&1 | q > $D/ddp-compiled.log
python -m gnnbench.report $D/ddp-eager $D/ddp-compiled --out $D/ddp --no-wandb > $D/ddp-report.log 2>&1
SWEEP="model=gcn,sage workload=synthetic-arxiv variant=eager,default train.seed=0,1,2 wandb.mode=disabled data_dir=/tmp/data"
timeout 150 python -m gnnbench -m $SWEEP hydra.sweep.dir=$D/one-gpu 2>&1 | q > $D/one-gpu.log
timeout 120 python -m gnnbench -m hydra/launcher=gpu-pool $SWEEP hydra.sweep.dir=$D/gpu-pool 2>&1 | q > $D/gpu-pool.log
python -m gnnbench.report $D/one-gpu $D/gpu-pool --out $D/pool-vs-one --no-wandb > $D/pool-report.log 2>&1
tar czf "$OUT/x2.tgz" -C /tmp x2
grep -E "wall|Scaling|scaling|DDP" $D/ddp/report.md | head -20; head -12 $D/one-gpu/report.md | grep -i wall; head -12 $D/gpu-pool/report.md | grep -i wall; tail -3 "$OUT/gpu_tests.log"
