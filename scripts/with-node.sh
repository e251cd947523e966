#!/usr/bin/env bash
# Runs a command on the Node `npm test` runs on (scripts/node-runtime.sh: the host's when it is >=22.12, else the
# image's, fetched once into .cache/control-plane/). For single test files on an older host, e.g.
#   bash scripts/with-node.sh npx vitest run --project integration test/integration/queue-contracts.test.ts
set -euo pipefail
# shellcheck source=node-runtime.sh
source "$(dirname "${BASH_SOURCE[0]}")/node-runtime.sh"
ripple_use_node
exec "$@"
