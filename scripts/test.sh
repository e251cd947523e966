#!/usr/bin/env bash
# The test command: type-check, lint, unit tests, then integration tests against the real local control
# plane and Redis (brought up by the test harness and stopped afterwards). Ends with "N passed, N failed".
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# The real node's tests (Ripple's image in real pods, its chart, real traffic) run wherever they can: as root,
# where containers run (docs/operations.md, "The real node"). RIPPLE_REAL_NODE=0 leaves them out; elsewhere they
# are not selected, and this says so.
if [[ -z "${RIPPLE_REAL_NODE:-}" ]]; then
  if [[ $(id -u) == 0 ]]; then export RIPPLE_REAL_NODE=1
  else echo "test: not root, so the real node's tests (test/integration/real-node-*) and testcontainers' (testcontainers-*) are left out; run as root to include them"
  fi
fi
bash scripts/ensure-deps.sh || exit 1
# The same Node ensure-deps chose (the host's if >=22.12, else the image's), first on PATH for everything below.
# shellcheck source=node-runtime.sh
source scripts/node-runtime.sh && ripple_use_node || exit 1
echo "test: on Node $(node --version) ($(command -v node))"

status=0
echo "test: type-checking"; npx tsc --noEmit -p tsconfig.json || status=1
echo "test: linting"; npx eslint . || status=1

mkdir -p .cache
report=.cache/vitest-report.json
rm -f "$report"
npx vitest run --reporter=default --reporter=json --outputFile="$report" "$@" || status=1

if [[ -f "$report" ]]; then
  node -e '
    const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const failed = r.numFailedTests + (r.numFailedTestSuites > 0 && r.numFailedTests === 0 ? r.numFailedTestSuites : 0);
    console.log(`${r.numPassedTests} passed, ${failed} failed`);
    if (r.numTotalTests === 0) process.exit(1);
  ' "$report" || status=1
else
  echo "0 passed, 1 failed"
  status=1
fi
exit $status
