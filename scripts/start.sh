#!/usr/bin/env bash
# The main command: sets up what is missing, then runs Ripple all-in-one on its embedded default — the
# local sandbox control plane and a local Redis — in the foreground until Ctrl-C, which stops them too.
# Pass --kubeconfig PATH (or RIPPLE_KUBECONFIG) to use a real cluster instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/ensure-deps.sh
# shellcheck source=node-runtime.sh
source scripts/node-runtime.sh && ripple_use_node
exec node --import tsx cli/ripple.ts all "$@"
