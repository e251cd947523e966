#!/usr/bin/env bash
# Installs what Ripple needs on a fresh machine, and nothing twice: npm packages, Debian's redis-server
# (and openssl, curl), and the local control plane built from the Go module proxy.
#
# `ensure-deps.sh early` stops after what most tests need (packages, the control plane, Helm); `ensure-deps.sh
# late` builds the rest (KEDA, and with RIPPLE_REAL_NODE=1 the node's CoreDNS and images, the Redis image), which
# only the late test files use (scripts/test.sh runs it beside the other files); no argument does both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { printf 'setup: %s\n' "$*"; }
stage="${1:-all}"
case "$stage" in all | early | late) ;; *) echo "usage: ensure-deps.sh [early|late]" >&2; exit 2 ;; esac

# What most tests need: packages, the control plane, Helm.
early() {
  if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
    say "installing npm packages (npm ci)"
    # npm ci refuses a lockfile whose optional platform packages the registry no longer serves (seen with
    # msgpackr-extract's darwin/win32 builds); npm install resolves the same pinned versions without them.
    npm ci --no-audit --no-fund --loglevel=error 2>/dev/null || npm install --no-audit --no-fund --loglevel=error
  fi
  # Addons compiled at install time (node-gyp's build/Release: ssh2's sshcrypto and cpu-features, under
  # testcontainers) load only on the Node ABI they were built for; node_modules installed by another Node (the host's
  # Node 20 before the runtime moved) has them for that one. Both are optional, and ssh2 skips them silently, so
  # this loads each and rebuilds when one does not. (N-API modules, msgpackr-extract's or rolldown's, load on any.)
  stale="$(node -e '
    const fs = require("node:fs"), path = require("node:path");
    const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(path.join(d, e.name)) : e.name.endsWith(".node") && d.endsWith(path.join("build", "Release")) ? [path.join(d, e.name)] : []);
    for (const f of walk("node_modules")) {
      try { require(path.resolve(f)); } catch (err) { if (/NODE_MODULE_VERSION|did not self-register/.test(err.message)) console.log(f); }
    }')"
  if [[ -n "$stale" ]]; then
    say "rebuilding addons compiled for another Node than $(node --version): ${stale//$'\n'/ }"
    npm rebuild --no-audit --no-fund --loglevel=error
  fi

  missing=()
  command -v redis-server >/dev/null || [[ -n "${REDIS_URL:-}" ]] || missing+=(redis-server)
  # The fault-injection suite (test/faults/) fails a Redis primary over with real Sentinels.
  command -v redis-sentinel >/dev/null || missing+=(redis-sentinel)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  # The autoscaler's tests scrape a real Prometheus (Debian's package).
  command -v prometheus >/dev/null || [[ -n "${RIPPLE_NO_PROMETHEUS:-}" ]] || missing+=(prometheus)
  # The dashboard's browser tests drive Debian's Chromium headless (playwright-core, no browser download).
  command -v chromium >/dev/null || [[ -n "${RIPPLE_NO_BROWSER:-}" ]] || missing+=(chromium)
  # The real node (opt-in, RIPPLE_REAL_NODE=1; docs/operations.md): Debian's containerd, runc, CNI plugins and
  # iptables run it; mmdebstrap makes the base image's Debian rootfs; buildah builds Ripple's image from
  # infra/deploy/Dockerfile on it (`buildah bud --isolation chroot`, no daemon).
  if [[ "${RIPPLE_REAL_NODE:-}" == 1 ]]; then
    for c in containerd runc iptables mmdebstrap buildah; do command -v "$c" >/dev/null || missing+=("$c"); done
    [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  fi
  # testcontainers, with the real node's tests (test/integration/testcontainers-redis.test.ts): Debian's podman serves
  # the Docker API it talks to (no Docker here), slirp4netns networks its containers without a bridge or iptables.
  if [[ "${RIPPLE_REAL_NODE:-}" == 1 ]]; then
    for c in podman slirp4netns; do command -v "$c" >/dev/null || missing+=("$c"); done
  fi
  for extra in ${RIPPLE_EXTRA_PACKAGES:-}; do command -v "$extra" >/dev/null || missing+=("$extra"); done
  if (( ${#missing[@]} > 0 )); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      say "installing Debian packages: ${missing[*]}"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
      echo "setup: please install: ${missing[*]} (e.g. sudo apt-get install -y ${missing[*]}), or set REDIS_URL" >&2; exit 1
    fi
  fi

  if [[ -z "${RIPPLE_TEST_KUBECONFIG:-}" ]]; then
    if ! command -v go >/dev/null; then
      echo "setup: Go 1.24 or newer is required to build the local control plane (or set RIPPLE_TEST_KUBECONFIG to a running cluster)" >&2; exit 1
    fi
    bash infra/local-control-plane/build.sh
    # Helm, for the chart's tests (charts/ripple), from the Go module proxy the same way.
    bash infra/local-control-plane/build-helm.sh
  fi
}

# What only the late test files need (KEDA; the real node's CoreDNS and images; the Redis image).
late() {
  if [[ -z "${RIPPLE_TEST_KUBECONFIG:-}" ]]; then
    # KEDA's operator and metrics server, for the autoscaler's end-to-end test (autoscaler-keda-e2e).
    bash infra/local-control-plane/build-keda.sh
    # The real node's CoreDNS and images (build.sh above built its kubelet and kube-proxy with RIPPLE_REAL_NODE=1),
    # Ripple's own among them (its node base, then the Dockerfile; each cached under a stamp of its inputs), and
    # examples/configmap-stamp's image built FROM it (a function of one's own; one small layer on Ripple's).
    if [[ "${RIPPLE_REAL_NODE:-}" == 1 ]]; then
      bash infra/local-control-plane/build-coredns.sh
      bash infra/images/build.sh pause modelserver ripple configmap-stamp
    fi
  fi

  # The Redis image the testcontainers test runs (ripple.local/redis:7, Debian's redis-server; built here, never
  # pulled; cached in .cache/control-plane/images like the node's images, about 40 s cold).
  if [[ "${RIPPLE_REAL_NODE:-}" == 1 ]]; then
    bash infra/images/build.sh redis
  fi
}

# Node >=22.12: the host's, or the image's fetched into .cache (scripts/node-runtime.sh). npm ci runs on it.
# shellcheck source=node-runtime.sh
source "$root/scripts/node-runtime.sh"
ripple_use_node || exit 1
if [[ "$stage" != late ]]; then early; fi
if [[ "$stage" != early ]]; then late; fi
