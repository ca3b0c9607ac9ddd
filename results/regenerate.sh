#!/usr/bin/env bash
# Every committed report, made again from the records beside it (or, where a folder has a
# sources.txt, from the folders it names, relative to results/), with today's report code;
# then the headline of results/README.md from the reference sweep. tests/test_committed_reports.py checks
# that each committed report.md and report.csv is what this makes.
set -euo pipefail
cd "$(dirname "$0")"
for report in $(find . -name report.md | sort); do
    folder=$(dirname "$report")
    if [[ -f "$folder/sources.txt" ]]; then
        mapfile -t sources < "$folder/sources.txt"
    else
        sources=("$folder")
    fi
    python -m gnnbench.report "${sources[@]}" --out "$folder" --no-wandb > /dev/null
    echo "made $folder/report.md from ${sources[*]}"
done
# The headline: the reference sweep, one graph-level and one heterogeneous workload.
cd .. && python -m gnnbench.report results/h200-reference results/h200-graphs/gin-exact \
    results/h200-graphs/mag-sage --out results/headline --no-wandb --readme results/README.md > /dev/null
echo "made the headline of results/README.md (results/headline) from $(tr '\n' ' ' < results/headline/sources.txt)"
