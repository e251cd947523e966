#!/usr/bin/env bash
# Builds KEDA's operator and metrics API server (the adapter) from the Go module proxy into the control
# plane's git-ignored cache, pinned by the wrapper module in keda/ (its go.mod and go.sum), and copies
# KEDA's CRDs beside them (keda-crds/). The KEDA end-to-end test runs them out of cluster
# (sandbox/keda.ts); a second run finds the stamp and returns at once.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
# shellcheck source=versions.env
source "$here/versions.env"
mkdir -p "$bin"
mod="$here/keda"
required="$(sed -n 's/^require github\.com\/kedacore\/keda\/v2 \(v[0-9.]*\)$/\1/p' "$mod/go.mod")"
if [[ "$required" != "$KEDA_VERSION" ]]; then
  echo "keda: versions.env pins KEDA $KEDA_VERSION but keda/go.mod requires ${required:-nothing}; make them agree (then run go mod tidy in keda/)" >&2
  exit 1
fi
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
# KEDA's CRDs ship inside its module (config/crd/bases), so they come from the same pinned download.
copy_crds() {
  local src
  src="$(cd "$mod" && go list -m -f '{{.Dir}}' github.com/kedacore/keda/v2)/config/crd/bases"
  rm -rf "$bin/keda-crds" && mkdir -p "$bin/keda-crds" && cp "$src"/*.yaml "$bin/keda-crds/"
}
stamp="$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)"
if [[ -x "$bin/keda-operator" && -x "$bin/keda-adapter" && "$(cat "$bin/.keda-stamp" 2>/dev/null)" == "$stamp" ]]; then
  if ! compgen -G "$bin/keda-crds/*.yaml" >/dev/null; then
    command -v go >/dev/null || { echo "keda: Go is required to fetch KEDA $KEDA_VERSION's CRDs" >&2; exit 1; }
    (cd "$mod" && go mod download github.com/kedacore/keda/v2) && copy_crds
  fi
  echo "keda: $KEDA_VERSION is current in $bin"; exit 0
fi
if ! command -v go >/dev/null; then
  echo "keda: Go 1.26 or newer is required to build KEDA $KEDA_VERSION (it is what github.com/kedacore/keda/v2 $KEDA_VERSION declares)" >&2
  exit 1
fi
started=$(date +%s)
echo "keda: building KEDA $KEDA_VERSION (operator and metrics API server) into $bin"
echo "keda: a cold build downloads the modules and compiles for about 11 minutes on an idle 2-core machine (552 s + 86 s measured; much longer while other work shares the CPU); later builds take seconds"
echo "keda: [1/2] downloading modules (0s elapsed)"
(cd "$mod" && go mod download)
echo "keda: [2/2] compiling cmd/operator and cmd/adapter ($(( $(date +%s) - started ))s elapsed)"
# One go build for both main packages: they share almost every dependency, which then compiles once.
# With -o naming a directory, go build writes one binary per main package, named after its directory.
out="$(mktemp -d "$bin/.keda-build.XXXXXX")"
trap 'rm -rf "$out"' EXIT
ldf="-s -w -X github.com/kedacore/keda/v2/version.Version=$KEDA_VERSION"
(cd "$mod" && go build -trimpath -ldflags "$ldf" -o "$out/" \
  github.com/kedacore/keda/v2/cmd/operator github.com/kedacore/keda/v2/cmd/adapter)
mv "$out/operator" "$bin/keda-operator"
mv "$out/adapter" "$bin/keda-adapter"
copy_crds
echo "$stamp" > "$bin/.keda-stamp"
echo "keda: built in $(( $(date +%s) - started ))s"
