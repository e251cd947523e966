# Sourced by the sandbox scripts: where the built binaries and the running sandbox's state live.
# RIPPLE_CONTROL_PLANE_BIN and RIPPLE_SANDBOX_DIR override them (tests run a second sandbox this way).
here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${RIPPLE_CONTROL_PLANE_BIN:-$root/.cache/control-plane/bin}"
dir="${RIPPLE_SANDBOX_DIR:-$root/.sandbox}"
