#!/usr/bin/env bash
# Stops every process up.sh started and removes the sandbox's state (etcd data, keys, kubeconfig).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
bash "$here/node-down.sh"  # the real node first (nothing when there is none), while the API server still answers
# The Ripple process that started the sandbox (sandbox/control-plane.ts writes owner and owned): if it is
# gone, say so; what it started beside the control plane (its redis-server) is stopped too, but only a
# process whose start time still matches the record, never a stranger that reused its pid.
started_at() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
if [[ -f "$dir/owner" ]] && read -r _ owner owner_start < "$dir/owner" && [[ "$(started_at "$owner")" != "$owner_start" ]]; then
  echo "sandbox: the Ripple process $owner that started this sandbox is not running any more; stopping what it left"
fi
if [[ -f "$dir/owned" ]]; then
  while read -r name pid start; do
    [[ -n "$start" && "$(started_at "$pid")" == "$start" ]] || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
    echo "sandbox: stopped $name (pid $pid)"
  done < "$dir/owned"
fi
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
