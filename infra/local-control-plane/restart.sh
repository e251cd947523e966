#!/usr/bin/env bash
# Restarts one component of the running sandbox with the same flags and ports (tests use it to cut
# every watch at once: `restart.sh kube-apiserver`). Waits until the apiserver answers again.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
name="${1:?usage: restart.sh <etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok> [down-seconds]}"
down="${2:-0}"
[[ -f "$dir/cmd/$name" ]] || { echo "sandbox: no running $name in $dir" >&2; exit 1; }
touch "$dir/restarting"; trap 'rm -f "$dir/restarting"' EXIT
pid="$(awk -v n="$name" '$1 == n { print $2 }' "$dir/pids" | tail -n 1)"
kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
for _ in $(seq 1 80); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
kill -KILL -- "-$pid" 2>/dev/null || true
sleep "$down"
eval "setsid $(cat "$dir/cmd/$name") >>'$dir/logs/$name.log' 2>&1 < /dev/null &"
awk -v n="$name" '$1 != n' "$dir/pids" > "$dir/pids.new"; echo "$name $!" >> "$dir/pids.new"; mv "$dir/pids.new" "$dir/pids"
for _ in $(seq 1 240); do
  "$bin/kubectl" --kubeconfig "$dir/kubeconfig" get --raw /readyz >/dev/null 2>&1 && { echo "sandbox: restarted $name"; exit 0; }
  sleep 0.25
done
echo "sandbox: $name did not come back within 60s; see $dir/logs/$name.log" >&2; exit 1
