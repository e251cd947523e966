#!/usr/bin/env bash
# Builds CoreDNS, the real node's cluster DNS (node-up.sh), from the Go module proxy into the control plane's
# git-ignored cache, pinned by the wrapper module in coredns/ (its go.mod and go.sum). A second run finds the
# stamp and returns at once.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
mkdir -p "$bin"
mod="$here/coredns"
version="$(sed -n 's/^require github\.com\/coredns\/coredns \(v[0-9.]*\)$/\1/p' "$mod/go.mod")"
stamp="$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)"
if [[ -x "$bin/coredns" && "$(cat "$bin/.coredns-stamp" 2>/dev/null)" == "$stamp" ]]; then
  echo "coredns: $version is current in $bin"; exit 0
fi
if ! command -v go >/dev/null; then
  echo "coredns: Go 1.26 or newer is required to build CoreDNS $version (it is what its go.mod declares)" >&2
  exit 1
fi
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
started=$(date +%s)
echo "coredns: building CoreDNS $version into $bin"
echo "coredns: a cold build downloads the modules and compiles for about 2 minutes on an idle 2-core machine (17 s + 105 s measured); later builds take seconds"
echo "coredns: [1/2] downloading modules (0s elapsed)"
(cd "$mod" && go mod download)
echo "coredns: [2/2] compiling github.com/coredns/coredns ($(( $(date +%s) - started ))s elapsed)"
(cd "$mod" && go build -trimpath -ldflags "-s -w" -o "$bin/coredns" github.com/coredns/coredns)
echo "$stamp" > "$bin/.coredns-stamp"
echo "coredns: built in $(( $(date +%s) - started ))s"
# sed, not head: head exits after one line, and CoreDNS writing its second one then dies of SIGPIPE (status 141,
# about 1 run in 8), which failed a cold CI here under pipefail.
"$bin/coredns" -version | sed -n 1p
