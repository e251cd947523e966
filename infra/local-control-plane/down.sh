#!/usr/bin/env bash
# Stops every process up.sh started and removes the sandbox's state (etcd data, keys, kubeconfig).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
bash "$here/node-down.sh"  # the real node first (nothing when there is none), while the API server still answers
if [[ ! -f "$dir/pids" ]]; then
  echo "sandbox: nothing running in $dir"; rm -rf "$dir"; exit 0
fi
# Stop in reverse start order, so clients go before the apiserver and the apiserver before etcd.
tac "$dir/pids" | while read -r name pid; do
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  echo "sandbox: stopped $name"
done
rm -rf "$dir"
echo "sandbox: state removed"
