# Sourced (not run) by scripts/ensure-deps.sh, test.sh, start.sh and bench.sh: puts a Node that Ripple supports
# first on PATH, so npm ci, tsc, eslint, vitest and every process the tests spawn (node, tsx, npm start, bin/ripple.js)
# run on it.
#
# Ripple supports Node >=22.19 (package.json `engines`: @kubernetes/client-node 2 brings undici 8, which needs 22.19;
# vitest 5 requires ^22.12 || ^24 || >=26). The host's Node is
# used when it is on one of those lines. Otherwise (Node 20, end of life since April 2026, is the host's here; or an
# odd, short-lived 23 or 25) the image's Node is used: infra/images/versions.env NODE_VERSION, the official build
# npm serves as node-linux-<arch>, fetched once with `npm pack` into .cache/control-plane/node-v<version>-linux-<arch>/
# (beside the control plane's binaries, so worktrees that share that folder share it too). No root is needed: the
# host's npm fetches it (npm's cache serves infra/images/build.sh's `npm pack` of the same package afterwards).
# Only bin/node and include/node are kept; npm stays the host's. The headers matter: node-gyp compiles install-time
# addons against `nodedir`, which Debian's npm sets to /usr (the host Node's headers), so npm_config_nodedir points
# it at this Node's. Delete the folder to fetch it again.

ripple_node_supported() { # NODE: exits 0 when that node is on a line Ripple supports
  "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number);
    process.exit((a === 22 && b >= 19) || a === 24 || a >= 26 ? 0 : 1)' 2>/dev/null
}

ripple_use_node() {
  local root version arch base dir tmp
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if command -v node >/dev/null && ripple_node_supported node; then return 0; fi
  version="$(. "$root/infra/images/versions.env" && echo "$NODE_VERSION")"
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "setup: Node 22.19 or newer is required (found: $(node --version 2>/dev/null || echo none)), and npm has no node-linux build for $(uname -m)" >&2; return 1 ;;
  esac
  base="$root/.cache/control-plane/node-v$version-linux-$arch"
  dir="$base/bin"
  if [[ ! -x "$dir/node" || ! -f "$base/include/node/common.gypi" ]]; then
    if ! command -v npm >/dev/null; then
      echo "setup: Node 22.19 or newer is required (found: $(node --version 2>/dev/null || echo none)); install it, or npm to fetch Node $version" >&2
      return 1
    fi
    printf 'setup: the host has Node %s; fetching Node %s (npm: node-linux-%s) into %s\n' \
      "$(node --version 2>/dev/null || echo none)" "$version" "$arch" "${dir#"$root/"}"
    tmp="$(mktemp -d)"
    if ! (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null) ||
      ! tar -xzf "$tmp/node-linux-$arch-$version.tgz" -C "$tmp" package/bin/node package/include/node; then
      rm -rf "$tmp"
      echo "setup: could not fetch node-linux-$arch@$version from the npm registry; install Node 22.19 or newer instead" >&2
      return 1
    fi
    mkdir -p "$dir"
    rm -rf "$base/include" && mv "$tmp/package/include" "$base/include"
    install -m 0755 "$tmp/package/bin/node" "$dir/node.tmp" && mv "$dir/node.tmp" "$dir/node"
    rm -rf "$tmp"
  fi
  # Checked, not assumed: a binary that does not run here (a wrong libc, a truncated file) stops setup now.
  ripple_node_supported "$dir/node" || { echo "setup: $dir/node does not run on this machine; delete it to fetch it again" >&2; return 1; }
  export PATH="$dir:$PATH" npm_config_nodedir="$base"
}
