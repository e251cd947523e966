#!/usr/bin/env bash
# The test command: type-check, lint, unit tests, then integration tests against the real local control
# plane and Redis (brought up by the test harness and stopped afterwards). Ends with "N passed, N failed".
#
# With no arguments, the files that need KEDA or the real node's images (LATE_TESTS in vitest.config.ts) run last,
# and those builds (`scripts/ensure-deps.sh late`, the longest of a cold start) run in the background while the
# other files run: a cold run is that much shorter. With arguments (vitest's filters), everything is built first
# and one vitest run takes them.
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
# The same Node ensure-deps chose (the host's if >=22.12, else the image's), first on PATH for everything after it.
use_node() {
  # shellcheck source=node-runtime.sh
  source scripts/node-runtime.sh && ripple_use_node || exit 1
  echo "test: on Node $(node --version) ($(command -v node))"
}
mkdir -p .cache
rm -f .cache/vitest-report*.json
status=0
reports=()
run_vitest() {
  local report="$1"; shift
  reports+=("$report")
  npx vitest run --reporter=default --reporter=json --outputFile="$report" "$@" || status=1
}
check() {
  echo "test: type-checking"; npx tsc --noEmit -p tsconfig.json || status=1
  echo "test: linting"; npx eslint . || status=1
}

late_failed=0
if (( $# > 0 )) || [[ -n "${RIPPLE_TEST_KUBECONFIG:-}" ]]; then
  bash scripts/ensure-deps.sh || exit 1
  use_node
  check
  run_vitest .cache/vitest-report.json "$@"
else
  bash scripts/ensure-deps.sh early || exit 1
  use_node
  late_log=.cache/late-builds.log
  echo "test: building KEDA and the real node's images in the background while the other files run (log: $late_log)"
  bash scripts/ensure-deps.sh late >"$late_log" 2>&1 &
  late_pid=$!
  check
  # Not the real node yet (its images are among the background builds): its files come after.
  RIPPLE_REAL_NODE=0 RIPPLE_TEST_LATE=skip run_vitest .cache/vitest-report-1.json
  if kill -0 "$late_pid" 2>/dev/null; then echo "test: waiting for the background builds: $(tail -1 "$late_log")"; fi
  if wait "$late_pid"; then
    echo "test: background builds done; now the files that need them"
    late=(autoscaler-keda-e2e)
    [[ "${RIPPLE_REAL_NODE:-}" == 1 ]] && late+=(real-node- testcontainers-)
    run_vitest .cache/vitest-report-2.json --project integration "${late[@]}"
  else
    echo "test: the background builds failed, so the files that need them did not run; the end of $late_log:" >&2
    tail -30 "$late_log" >&2
    status=1; late_failed=1
  fi
fi

node -e '
  const fs = require("fs");
  const [lateFailed, ...files] = process.argv.slice(1);
  let passed = 0, failed = Number(lateFailed), total = 0;
  for (const f of files) {
    if (!fs.existsSync(f)) { failed++; continue; }
    const r = JSON.parse(fs.readFileSync(f, "utf8"));
    // Name every failure again at the end: CI keeps only the tail of a long log.
    for (const file of r.testResults ?? []) {
      const where = file.name.replace(process.cwd() + "/", "");
      const tests = (file.assertionResults ?? []).filter((t) => t.status === "failed");
      if (tests.length === 0 && file.status === "failed") {
        console.log(`FAILED ${where}: ${(file.message ?? "").split("\n")[0].slice(0, 400)}`);
      }
      for (const t of tests) {
        console.log(`FAILED ${where} > ${t.fullName}: ${(t.failureMessages?.[0] ?? "").split("\n")[0].slice(0, 400)}`);
      }
    }
    passed += r.numPassedTests;
    failed += r.numFailedTests + (r.numFailedTestSuites > 0 && r.numFailedTests === 0 ? r.numFailedTestSuites : 0);
    total += r.numTotalTests;
  }
  console.log(`${passed} passed, ${failed} failed`);
  if (total === 0) process.exit(1);
' "$late_failed" "${reports[@]}" || status=1
exit $status
