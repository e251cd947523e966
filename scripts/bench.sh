#!/usr/bin/env bash
# Runs every benchmark in bench/ (or the ones named: npm run bench -- queue-throughput) against the real
# sandbox and a real Redis; each writes its results to bench/results/. Not part of the tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/ensure-deps.sh
# shellcheck source=node-runtime.sh
source scripts/node-runtime.sh && ripple_use_node
names=("$@")
if (( ${#names[@]} == 0 )); then
  for f in bench/*.ts; do names+=("$(basename "$f" .ts)"); done
fi
for n in "${names[@]}"; do
  echo "bench: $n"
  node --import tsx "bench/$n.ts"
done
