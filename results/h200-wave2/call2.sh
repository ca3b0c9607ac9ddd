#!/usr/bin/env bash
# Device call 2 (one H200): the arxiv-size train step with each layout and TF32, neighbour
# batches with padding and prefetching, the sampler A/B, and the suite's overhead.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data
q() { grep -v -E "^\[|cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 200 python -m gnnbench.benchmarks.limits --parts step --rounds 1 --data-dir /tmp/data --out "$OUT/limits-step.json" 2>&1 | q > "$OUT/limits-step.log"
timeout 150 python -m gnnbench.benchmarks.limits --parts minibatch --rounds 1 --data-dir /tmp/data --out "$OUT/limits-minibatch.json" 2>&1 | q > "$OUT/limits-minibatch.log"
timeout 100 python -m gnnbench.benchmarks.sampler --device cuda --dedup mark,unique --data-dir /tmp/data --out "$OUT/sampler-ab.json" 2>&1 | q > "$OUT/sampler-ab.log"
timeout 60 python -m gnnbench.benchmarks.sampler --device cuda --prefetch --data-dir /tmp/data --out "$OUT/sampler-prefetch.json" 2>&1 | q > "$OUT/sampler-prefetch.log"
timeout 100 python -m gnnbench.benchmarks.overhead --device cuda --cases cora --rounds 8 --data-dir /tmp/data --out "$OUT/overhead-cora.json" 2>&1 | q > "$OUT/overhead-cora.log"
tail -n 12 "$OUT"/limits-step.log "$OUT"/limits-minibatch.log; tail -n 6 "$OUT"/sampler-*.log "$OUT"/overhead-cora.log
