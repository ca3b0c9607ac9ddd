#!/bin/bash
set -x
cd /work/wt-perf
. .venv/bin/activate
R=results/cpu-sampler
export OMP_NUM_THREADS=1
python results/cpu-sampler/compare_old.py /tmp/old_sampler.py --dataset synthetic-arxiv --data-dir /tmp/perf-data --batches 60 --out $R/old-vs-new-arxiv.json
python -m gnnbench.benchmarks.sampler --device cpu --dataset synthetic-arxiv --data-dir /tmp/perf-data --dedup mark,unique --no-step --batches 50 --warmup 5 --threads 1 --out $R/ab-arxiv.json
# same command, old tree then new tree, with the training step (the README's first question)
(cd /tmp/perf-old && python -m gnnbench.benchmarks.sampler --device cpu --dataset synthetic-arxiv --data-dir /tmp/perf-data --batches 20 --warmup 3 --out /work/wt-perf/$R/with-step-arxiv-before.json)
python -m gnnbench.benchmarks.sampler --device cpu --dataset synthetic-arxiv --data-dir /tmp/perf-data --batches 20 --warmup 3 --out $R/with-step-arxiv-after.json
python results/cpu-sampler/compare_old.py /tmp/old_sampler.py --dataset synthetic-products --data-dir /tmp/perf-data --batches 30 --out $R/old-vs-new-products.json
python -m gnnbench.benchmarks.sampler --device cpu --dataset synthetic-products --data-dir /tmp/perf-data --dedup mark,unique --no-step --batches 30 --warmup 3 --threads 1 --out $R/ab-products.json
echo ALL-DONE
