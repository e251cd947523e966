#!/usr/bin/env bash
# Starts a real node beside the sandbox's KWOK nodes (up.sh runs it when RIPPLE_REAL_NODE=1): Debian's
# containerd, runc and CNI bridge plugin; kubelet and kube-proxy v1.34.4 and CoreDNS built from the Go module
# proxy; the images built by infra/images/build.sh loaded into containerd (nothing is pulled). The node carries
# the taint ripple.dev/real-node=true:NoSchedule, so only pods that tolerate it run containers; every other pod
# stays on KWOK. Its state lives in $RIPPLE_SANDBOX_DIR/node; node-down.sh removes every trace of it.
# Needs root (containers, a bridge, iptables). Running it again while the node is Ready only checks it.
set -euo pipefail
# up.sh runs this under its umask 077 (for its secrets): containerd would create each image layer's root
# directory 0700 with it, and a container's non-root user could then not traverse its own / ("exec: node:
# executable file not found", "libdl.so.2: Permission denied"; seen in CI with Ripple's image, uid 1000).
umask 022
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
# shellcheck source=node.env
source "$here/node.env"
nd="$dir/node"
started=$(date +%s)
say() { printf 'real node: %s (%ds)\n' "$*" "$(( $(date +%s) - started ))"; }
die() { printf 'real node: %s\n' "$*" >&2; exit 1; }
kubectl() { "$bin/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }

images="${RIPPLE_IMAGES_DIR:-$root/.cache/control-plane/images}"
ctr() { command ctr --address "$nd/containerd.sock" --namespace k8s.io "$@"; }
# Images from their OCI archives, each imported again only when its archive changed (a running node picks up a
# rebuilt image on the next node-up.sh). The archives name each image in io.containerd.image.name; any other name
# an import makes (import-<date>:…) is removed, since the CRI plugin may resolve an image to it and fail.
load_images() {
  local name tar id
  touch "$nd/images.loaded"
  for name in pause modelserver ripple configmap-stamp; do
    tar="$images/$name.tar"; [[ -s "$tar" ]] || continue
    id="$name $(stat -c '%s %Y' "$tar")"
    grep -qxF "$id" "$nd/images.loaded" && continue
    say "loading the image $name into containerd"
    ctr images import "$tar" >/dev/null
    sed -i "/^$name /d" "$nd/images.loaded"; echo "$id" >> "$nd/images.loaded"
  done
  ctr images ls -q | { grep '^import-' || true; } | xargs -r ctr images rm >/dev/null
}

[[ -f "$dir/kubeconfig" ]] || die "no sandbox in $dir; start it first (infra/local-control-plane/up.sh)"
if [[ -f "$nd/pids" ]]; then
  alive=1; while read -r _ pid; do kill -0 "$pid" 2>/dev/null || alive=0; done < "$nd/pids"
  if (( alive )) && kubectl wait --for=condition=Ready "node/$REAL_NODE_NAME" --timeout=30s >/dev/null 2>&1; then
    load_images; say "already running"; exit 0
  fi
  say "found a stopped or broken node in $nd; cleaning it up first"
  bash "$here/node-down.sh" >/dev/null
fi
[[ $(id -u) == 0 ]] || die "the real node needs root (containers, a bridge, iptables)"
for c in containerd containerd-shim-runc-v2 runc ctr iptables ip; do
  command -v "$c" >/dev/null || die "$c is missing; run RIPPLE_REAL_NODE=1 scripts/ensure-deps.sh (Debian's containerd, runc, containernetworking-plugins, iptables)"
done
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || die "the CNI plugins are missing (apt-get install containernetworking-plugins)"
if ip link show "$REAL_NODE_BRIDGE" >/dev/null 2>&1; then
  die "the bridge $REAL_NODE_BRIDGE exists but $nd does not hold a node: another sandbox runs the real node (one per machine); stop it with its node-down.sh"
fi

RIPPLE_REAL_NODE=1 bash "$here/build.sh"
bash "$here/build-coredns.sh"
bash "$here/../images/build.sh" pause modelserver

mkdir -p "$nd"/{logs,cni/net.d,cni/ipam,containerd,kubelet,pod-logs,runc}
: > "$nd/pids"
launch() { # name, then the command; its own session, so node-down.sh can stop its whole group
  local name="$1"; shift
  setsid "$@" >"$nd/logs/$name.log" 2>&1 < /dev/null &
  echo "$name $!" >> "$nd/pids"
}
free_port() { node -e 'const s = require("node:net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'; }
wait_for() { # what, seconds, command...
  local what="$1" secs="$2" i; shift 2
  for ((i = 0; i < secs * 4; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "$what did not become ready within ${secs}s; see $nd/logs/ (then run infra/local-control-plane/node-down.sh)"
}

# Host settings the node changes, saved first so node-down.sh puts them back: forwarding and bridged traffic
# through iptables (kube-proxy's DNAT of a Service's ClusterIP for a pod on the same bridge), and the kernel
# defaults kubelet sets (protectKernelDefaults: false).
for s in $REAL_NODE_SYSCTLS; do [[ -r "/proc/sys/$s" ]] && echo "$s $(cat "/proc/sys/$s")"; done > "$nd/sysctls.saved"
echo 1 > /proc/sys/net/ipv4/ip_forward
echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables

# The bridge exists before the first pod, so CoreDNS can listen on its address; the CNI bridge plugin adopts it.
say "creating the bridge $REAL_NODE_BRIDGE ($REAL_NODE_IP)"
ip link add "$REAL_NODE_BRIDGE" type bridge
ip addr add "$REAL_NODE_IP/${REAL_NODE_POD_SUBNET#*/}" dev "$REAL_NODE_BRIDGE"
ip link set "$REAL_NODE_BRIDGE" up
# Pods talk to each other, to Services and to CoreDNS on this node, never beyond it: no default route (only the
# service range, through the bridge), no masquerading.
cat > "$nd/cni/net.d/10-ripple.conflist" <<CNI
{"cniVersion": "1.0.0", "name": "ripple-real-node", "plugins": [
  {"type": "bridge", "bridge": "$REAL_NODE_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$nd/cni/ipam",
            "ranges": [[{"subnet": "$REAL_NODE_POD_SUBNET", "gateway": "$REAL_NODE_IP"}]],
            "routes": [{"dst": "$REAL_NODE_SERVICE_CIDR"}]}}]}
CNI

# containerd keeps everything under $nd: its root and state, runc's state, the pods' network namespaces.
# restrict_oom_score_adj: this machine lacks CAP_SYS_RESOURCE, and the kubelet's -998 for a pod sandbox made
# runc fail ("can't get final child's PID from pipe: EOF"). No systemd here, so cgroupfs.
cat > "$nd/containerd/config.toml" <<TOML
version = 2
root = "$nd/containerd/root"
state = "$nd/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$nd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$nd/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "ripple.local/pause:1"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$nd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$nd/cni/net.d"
    max_conf_num = 1
TOML
say "starting containerd"
launch containerd containerd --config "$nd/containerd/config.toml"
wait_for containerd 30 ctr version
load_images

# The node's identities: the admin credentials, impersonating the user a kubeadm node would have, so the Node
# authorizer, NodeRestriction and the default RBAC for kube-proxy judge their requests as on a real cluster.
server="$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')"
token="$(kubectl config view --raw --minify -o jsonpath='{.users[0].user.token}')"
identity_kubeconfig() { # file, user, groups (a YAML list)
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters: [{name: sandbox, cluster: {server: "$server", insecure-skip-tls-verify: true}}]
users: [{name: node, user: {token: "$token", as: "$2", as-groups: $3}}]
contexts: [{name: node, context: {cluster: sandbox, user: node}}]
current-context: node
KC
  chmod 600 "$1"
}
# The API server for pods: the `kubernetes` Service's endpoint is the bridge address (up.sh advertises it), on
# the apiserver's own port; forward it to loopback, where the apiserver listens.
api_port="${server##*:}"
launch api-forward node "$here/api-forward.mjs" "$REAL_NODE_IP" "$api_port"
wait_for "the API server forward on $REAL_NODE_IP:$api_port" 30 curl -ksS -o /dev/null "https://$REAL_NODE_IP:$api_port/readyz"
identity_kubeconfig "$nd/kubelet.kubeconfig" "system:node:$REAL_NODE_NAME" '[system:nodes]'
identity_kubeconfig "$nd/kube-proxy.kubeconfig" system:kube-proxy '[]'

# Cluster DNS: CoreDNS on the bridge's address, behind the kube-dns Service, so a pod's lookup goes through
# kube-proxy like any Service's traffic. It answers only cluster.local (no forward: nothing leaves the node).
say "starting CoreDNS on $REAL_NODE_IP:53"
kubectl apply -f - >/dev/null <<DNS
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: $REAL_NODE_DNS_IP
  ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-real-node
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: ripple.dev-real-node}
addressType: IPv4
endpoints: [{addresses: ["$REAL_NODE_IP"], conditions: {ready: true}}]
ports: [{name: dns, port: 53, protocol: UDP}, {name: dns-tcp, port: 53, protocol: TCP}]
DNS
dns_health="$(free_port)"
cat > "$nd/Corefile" <<COREFILE
.:53 {
  bind $REAL_NODE_IP
  errors
  health 127.0.0.1:$dns_health
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $dir/kubeconfig
    fallthrough in-addr.arpa ip6.arpa
  }
}
COREFILE
launch coredns "$bin/coredns" -conf "$nd/Corefile"
wait_for CoreDNS 30 curl -fsS "http://127.0.0.1:$dns_health/health"

say "starting kube-proxy"
launch kube-proxy "$bin/kube-proxy" --kubeconfig "$nd/kube-proxy.kubeconfig" --hostname-override "$REAL_NODE_NAME" \
  --proxy-mode iptables --cluster-cidr "$REAL_NODE_POD_SUBNET" --bind-address "$REAL_NODE_IP" \
  --nodeport-addresses "$REAL_NODE_IP/32" --healthz-bind-address "127.0.0.1:$(free_port)" \
  --metrics-bind-address "127.0.0.1:$(free_port)" \
  --conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0

# Pods resolve only through cluster DNS: an empty resolv.conf for the node, so the host's resolver never leaks in.
: > "$nd/resolv.conf"
kubelet_health="$(free_port)"
cat > "$nd/kubelet.yaml" <<KUBELET
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$nd/containerd.sock
address: $REAL_NODE_IP
port: $(free_port)
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $kubelet_health
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
# This machine: no systemd (cgroupfs), cgroup v1 (still allowed in 1.34), swap allowed, no CAP_SYS_RESOURCE.
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
protectKernelDefaults: false
localStorageCapacityIsolation: false
enforceNodeAllocatable: []
# The images were loaded, not pulled: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {}
clusterDNS: ["$REAL_NODE_DNS_IP"]
clusterDomain: cluster.local
resolvConf: $nd/resolv.conf
podLogsDir: $nd/pod-logs
# Ripple in scaled mode is 8 pods; the tests add their ModelServings' on top.
maxPods: 110
registerWithTaints: [{key: $REAL_NODE_TAINT_KEY, value: "true", effect: NoSchedule}]
KUBELET
say "starting kubelet"
launch kubelet "$bin/kubelet" --config "$nd/kubelet.yaml" --kubeconfig "$nd/kubelet.kubeconfig" \
  --root-dir "$nd/kubelet" --hostname-override "$REAL_NODE_NAME" --node-ip "$REAL_NODE_IP" \
  --node-labels "type=real,$REAL_NODE_TAINT_KEY=true"
wait_for "the kubelet's node registration" 120 kubectl get "node/$REAL_NODE_NAME"
wait_for "a Ready real node" 120 kubectl wait --for=condition=Ready "node/$REAL_NODE_NAME" --timeout=1s
say "ready: node $REAL_NODE_NAME (taint $REAL_NODE_TAINT_KEY=true:NoSchedule); stop it with infra/local-control-plane/node-down.sh"
