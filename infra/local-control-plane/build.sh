#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from the Go
# module proxy into a git-ignored cache. A second run finds the stamp and returns at once.
# With RIPPLE_REAL_NODE=1 it also builds kubelet and kube-proxy, for the real node (node-up.sh), from the
# same wrapper module; they have their own stamp, so opting in later builds only them.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
# shellcheck source=versions.env
source "$here/versions.env"
mkdir -p "$bin"

stamp_of() { cat "$here/versions.env" "$here"/build/*/go.mod "$here"/build/*/go.sum | sha256sum | cut -c1-16; }
stages_stamp() { cat "$here/build/kwok/go.sum" "$here"/build/kwok/stages/*.go | sha256sum | cut -c1-16; }
stamp="$(stamp_of)"
all=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)
node_bins=(kubelet kube-proxy)
node_current() {
  [[ "${RIPPLE_REAL_NODE:-}" != 1 ]] && return 0
  [[ "$(cat "$bin/.node-stamp" 2>/dev/null)" == "$stamp" && -x "$bin/kubelet" && -x "$bin/kube-proxy" ]]
}
kube_ldflags() {
  local minor="${KUBERNETES_VERSION#v1.}" p ldf="-s -w"; minor="${minor%%.*}"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$ldf"
}
build_node_bins() { # kubelet, then kube-proxy, which reuses almost all of kubelet's compiled packages
  local c i=0 t0; t0=$(date +%s)
  for c in "${node_bins[@]}"; do
    i=$((i+1)); printf 'control plane: [node %d/%d] %s %s (%ds elapsed)\n' "$i" "${#node_bins[@]}" "$c" "$KUBERNETES_VERSION" "$(( $(date +%s) - t0 ))"
    (cd "$here/build/kubernetes" && go build -trimpath -tags selinux,notest -ldflags "$(kube_ldflags)" -o "$bin/$c" "k8s.io/kubernetes/cmd/$c")
  done
  echo "$stamp" > "$bin/.node-stamp"
}
if [[ -f "$bin/.stamp" && "$(cat "$bin/.stamp")" == "$stamp" ]]; then
  missing=0; for b in "${all[@]}"; do [[ -x "$bin/$b" ]] || missing=1; done
  [[ -s "$bin/kwok-stages.yaml" ]] || missing=1
  if [[ $missing == 0 ]]; then
    # The KWOK stages come from a small Go program, not a binary: when it changed, regenerate them alone.
    if [[ "$(cat "$bin/.kwok-stages-stamp" 2>/dev/null)" != "$(stages_stamp)" ]]; then
      echo "control plane: regenerating $bin/kwok-stages.yaml"
      (cd "$here/build/kwok" && GOTOOLCHAIN=local go run ./stages > "$bin/kwok-stages.yaml.new") \
        && mv "$bin/kwok-stages.yaml.new" "$bin/kwok-stages.yaml" && stages_stamp > "$bin/.kwok-stages-stamp" \
        || { echo "control plane: generating the KWOK stages failed (Go is required)" >&2; exit 1; }
    fi
    if ! node_current; then
      command -v go >/dev/null || { echo "control plane: Go is required to build kubelet and kube-proxy" >&2; exit 1; }
      echo "control plane: building kubelet and kube-proxy for the real node (42 s measured with Go's caches warm; about 3 minutes cold on an idle 2-core machine)"
      CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local build_node_bins
    fi
    echo "control plane: binaries are current in $bin"; exit 0
  fi
fi

if ! command -v go >/dev/null; then
  echo "control plane: Go is required to build the local control plane (go 1.24 or newer on PATH)." >&2
  exit 1
fi
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
# Never let Go fetch a newer toolchain behind our back: the pins above must build with the local Go.
export GOTOOLCHAIN=local

started=$(date +%s)
step=0; total=${#all[@]}
progress() { step=$((step+1)); printf 'control plane: [%d/%d] %s (%ds elapsed)\n' "$step" "$total" "$1" "$(( $(date +%s) - started ))"; }

ldf="$(kube_ldflags)"

echo "control plane: building Kubernetes $KUBERNETES_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION into $bin"
echo "control plane: a cold build downloads the modules and compiles for about 15 minutes on 2 cores (13 min measured); later builds reuse Go's caches and take seconds"
progress "etcd $ETCD_VERSION"
(cd "$here/build/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
progress "kwok $KWOK_VERSION"
(cd "$here/build/kwok" && go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok \
  && go run ./stages > "$bin/kwok-stages.yaml" && stages_stamp > "$bin/.kwok-stages-stamp")
cd "$here/build/kubernetes"
for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  progress "$c $KUBERNETES_VERSION"
  go build -trimpath -tags selinux,notest -ldflags "$ldf" -o "$bin/$c" "k8s.io/kubernetes/cmd/$c"
done
[[ "${RIPPLE_REAL_NODE:-}" == 1 ]] && build_node_bins
echo "$stamp" > "$bin/.stamp"
echo "control plane: built in $(( $(date +%s) - started ))s"
"$bin/kube-apiserver" --version
