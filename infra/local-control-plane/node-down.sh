#!/usr/bin/env bash
# Stops the real node node-up.sh started and removes every trace of it (down.sh runs it first): the kubelet,
# kube-proxy and CoreDNS; every container, its shim and its processes; containerd; the mounts under the node's
# state; the pods' network namespaces; kube-proxy's and the kubelet's iptables chains; the bridge; the kubepods
# cgroups; and the host settings it changed. Safe to run twice, and when no node runs it does nothing.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
# shellcheck source=node.env
source "$here/node.env"
nd="$dir/node"
[[ -d "$nd" ]] || exit 0
say() { printf 'real node: %s\n' "$*"; }

stop() { # name: TERM its process group, then KILL what is left after 10 s
  local pid; pid="$(awk -v n="$1" '$1 == n { print $2 }' "$nd/pids" 2>/dev/null | tail -n 1)"
  [[ -n "$pid" ]] || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  say "stopped $1"
}
# The kubelet first, so nothing restarts the containers removed below.
stop kubelet
stop kube-proxy
stop coredns
stop api-forward
stop ripple-redis  # scripts/sandbox-ripple.sh's Redis, when it ran
# While the API server is still up (down.sh stops it next), the cluster forgets the node and its DNS.
if [[ -f "$dir/kubeconfig" && -x "$bin/kubectl" ]]; then
  k=("$bin/kubectl" --kubeconfig "$dir/kubeconfig" --request-timeout 5s)
  "${k[@]}" delete node "$REAL_NODE_NAME" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  "${k[@]}" -n kube-system delete service kube-dns --ignore-not-found --wait=false >/dev/null 2>&1 || true
  "${k[@]}" -n kube-system delete endpointslice kube-dns-real-node --ignore-not-found --wait=false >/dev/null 2>&1 || true
fi

# Every container through containerd while it runs, then containerd itself.
sock="$nd/containerd.sock"
if [[ -S "$sock" ]]; then
  c=(ctr --address "$sock" --namespace k8s.io --timeout 10s)
  for id in $("${c[@]}" tasks ls -q 2>/dev/null); do "${c[@]}" tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
  for id in $("${c[@]}" tasks ls -q 2>/dev/null); do "${c[@]}" tasks rm -f "$id" >/dev/null 2>&1 || true; done
  for id in $("${c[@]}" containers ls -q 2>/dev/null); do "${c[@]}" containers rm "$id" >/dev/null 2>&1 || true; done
fi
stop containerd
# What may outlive containerd: shims started for this containerd, and container processes (in kubepods cgroups).
for p in /proc/[0-9]*; do
  pid="${p#/proc/}"
  if tr '\0' ' ' 2>/dev/null < "$p/cmdline" | grep -q "containerd-shim.*-address $sock"; then
    kill -KILL "$pid" 2>/dev/null && say "killed a leftover shim ($pid)"
  elif grep -q ':/kubepods' "$p/cgroup" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null && say "killed a leftover container process ($pid)"
  fi
done
sleep 0.5

# Mounts under the node's state: the pods' network namespaces (netns_mounts_under_state_dir), volumes, overlay
# rootfs, shm. Deepest first; lazily, as a process that just died may still hold one.
awk '{ print $2 }' /proc/mounts | grep "^$nd/" | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
done
# Network namespaces a runtime placed in the usual directory, had netns_mounts_under_state_dir been ignored.
for ns in /var/run/netns/cni-*; do [[ -e "$ns" ]] || continue
  grep -q "$ns" "$nd/logs/containerd.log" 2>/dev/null && { umount "$ns" 2>/dev/null; rm -f "$ns"; }
done

# iptables: kube-proxy removes its own rules; then any chain kube-proxy, the kubelet (KUBE-KUBELET-CANARY,
# KUBE-FIREWALL) or a CNI plugin (CNI-*) left, in both families, with the rules that jump to them.
[[ -x "$bin/kube-proxy" ]] && "$bin/kube-proxy" --cleanup --proxy-mode iptables >/dev/null 2>&1 || true
for ipt in iptables ip6tables; do
  command -v "$ipt" >/dev/null || continue
  for t in filter nat mangle raw; do
    "$ipt" -t "$t" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j (KUBE|CNI)-' | sed 's/^-A/-D/' | while read -r rule; do
      eval "$ipt -t $t $rule" 2>/dev/null || true
    done
    chains="$("$ipt" -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^(KUBE|CNI)-/ { print $2 }')"
    for ch in $chains; do "$ipt" -t "$t" -F "$ch" 2>/dev/null || true; done
    for ch in $chains; do "$ipt" -t "$t" -X "$ch" 2>/dev/null || true; done
  done
done

ip link del "$REAL_NODE_BRIDGE" 2>/dev/null || true
# The kubelet's cgroups (cgroupfs driver, cgroup v1), and containerd's own for its namespace (a container
# started with ctr): every such directory, deepest first.
for h in /sys/fs/cgroup/*/; do
  for g in kubepods k8s.io; do
    [[ -d "$h$g" ]] && find "$h$g" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
done
# The host settings node-up.sh changed, back to what they were.
if [[ -f "$nd/sysctls.saved" ]]; then
  while read -r s v; do echo "$v" > "/proc/sys/$s" 2>/dev/null || true; done < "$nd/sysctls.saved"
fi
rm -rf "$nd"
say "removed"
