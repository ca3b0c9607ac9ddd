#!/usr/bin/env bash
# Device call (one H200): the runner's own cost on Cora. The bare PyG loop against the
# runner, eager and compiled, 8 interleaved rounds of 40 epochs (overhead), and the
# runner's bookkeeping on its own (bookkeeping: the loop with stand-in steps, eager and
# compiled). Run from the repository root with the carried wheels installed into /tmp/site.
set -u
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p /tmp/data /tmp/u
q() { grep -v -E "cudagraph_trees|^[IVW][0-9]{4} " ; }
timeout 200 python -m gnnbench.benchmarks.overhead --device cuda --cases cora --rounds 8 \
    --data-dir /tmp/data --out /tmp/u/overhead-cora.json 2>&1 | q > /tmp/u/overhead-cora.log
echo "== overhead: exit ${PIPESTATUS[0]}"; grep -E "^cora" /tmp/u/overhead-cora.log
for c in "" --compile; do
    timeout 90 python -m gnnbench.benchmarks.bookkeeping --device cuda --rounds 7 $c \
        --data-dir /tmp/data --out "/tmp/u/bookkeeping${c:+-compiled}.json" 2>&1 | q \
        > "/tmp/u/bookkeeping${c:+-compiled}.log"
    echo "== bookkeeping $c: exit ${PIPESTATUS[0]}"; tail -4 "/tmp/u/bookkeeping${c:+-compiled}.log"
done
cp /tmp/u/overhead-cora.* /tmp/u/bookkeeping* "$OUT/"
