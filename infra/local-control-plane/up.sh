#!/usr/bin/env bash
# Starts Ripple's local sandbox: a real etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# a KWOK controller with fake nodes, all from binaries built by build.sh. Writes an admin kubeconfig to
# $RIPPLE_SANDBOX_DIR/kubeconfig (default .sandbox/kubeconfig) and leaves the processes running;
# down.sh stops them. Running it again while the sandbox is up only checks that it is healthy.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"
nodes="${RIPPLE_SANDBOX_NODES:-3}"
started=$(date +%s)
say() { printf 'sandbox: %s (%ds)\n' "$*" "$(( $(date +%s) - started ))"; }
die() { printf 'sandbox: %s\n' "$*" >&2; exit 1; }

kubectl() { "$bin/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }

if [[ -f "$dir/kubeconfig" && -f "$dir/pids" ]]; then
  # Its processes are alive but the API may be restarting (a test restarts kube-apiserver): wait for it
  # rather than tearing down a sandbox another run is using.
  alive=1; while read -r _ pid; do kill -0 "$pid" 2>/dev/null || alive=0; done < "$dir/pids"
  [[ -f "$dir/restarting" ]] && alive=1   # restart.sh is bringing a component back
  for ((i = 0; i < (alive ? 360 : 1); i++)); do
    if kubectl get --raw /readyz >/dev/null 2>&1; then say "already running; kubeconfig at $dir/kubeconfig"; exit 0; fi
    sleep 0.25
  done
fi
if [[ -f "$dir/pids" ]]; then
  say "found a stopped or broken sandbox in $dir; cleaning it up first"
  bash "$here/down.sh" >/dev/null
fi

bash "$here/build.sh"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
  [[ -x "$bin/$b" ]] || die "missing $bin/$b; run infra/local-control-plane/build.sh"
done
command -v openssl >/dev/null || die "openssl is required (apt-get install -y openssl)"

mkdir -p "$dir"/{certs,logs,etcd,cmd}
# Free ports, so a sandbox never collides with a user's cluster or another test run.
read -r p_etcd p_peer p_api < <(node -e '
  const net = require("node:net");
  const take = () => new Promise((res) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); }); });
  (async () => { const ps = []; for (let i = 0; i < 3; i++) ps.push(await take()); console.log(ps.join(" ")); })();')

openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
# The aggregation layer, for API servers registered by an APIService (KEDA's external metrics server,
# sandbox/keda.ts): kube-apiserver proxies to them with this client certificate, which they trust
# through the requestheader CA it publishes in kube-system/extension-apiserver-authentication.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$dir/front-proxy-ca.key" -out "$dir/front-proxy-ca.crt" -days 3650 -subj /CN=ripple-front-proxy-ca 2>/dev/null
openssl req "${ec[@]}" -keyout "$dir/front-proxy-client.key" -out "$dir/front-proxy-client.csr" -subj /CN=front-proxy-client 2>/dev/null
openssl x509 -req -in "$dir/front-proxy-client.csr" -CA "$dir/front-proxy-ca.crt" -CAkey "$dir/front-proxy-ca.key" -CAcreateserial \
  -out "$dir/front-proxy-client.crt" -days 3650 -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
token="$(openssl rand -hex 24)"
umask 077
printf '%s,ripple-admin,ripple-admin,"system:masters"\n' "$token" > "$dir/tokens.csv"

: > "$dir/pids"
launch() { # name, then the command; each runs in its own session so down.sh can stop its whole group
  local name="$1"; shift
  printf '%q ' "$@" > "$dir/cmd/$name"   # restart.sh starts it again with the same flags and ports
  setsid "$@" >"$dir/logs/$name.log" 2>&1 < /dev/null &
  echo "$name $!" >> "$dir/pids"
}
# A port chosen free can be taken before the component binds it (another test run starting servers):
# a component that dies on "address already in use" is started again on another port.
free_port() { node -e 'const s = require("node:net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'; }
start_serving() { # name, health URL with {PORT}, then the command with {PORT} where its port goes
  local name="$1" health="$2"; shift 2
  local attempt port pid a i args
  for attempt in 1 2 3; do
    port="$(free_port)"; args=()
    for a in "$@"; do args+=("${a//\{PORT\}/$port}"); done
    launch "$name" "${args[@]}"
    pid="$(awk -v n="$name" '$1 == n { p = $2 } END { print p }' "$dir/pids")"
    # Healthy and still alive 2 s after its start: a component that lost its port dies on binding, and
    # the port's health URL may be answered meanwhile by whoever took it.
    for ((i = 0; i < 240; i++)); do
      sleep 0.25
      kill -0 "$pid" 2>/dev/null || break
      (( i >= 8 )) && curl -ksf "${health//\{PORT\}/$port}" >/dev/null 2>&1 && kill -0 "$pid" 2>/dev/null && return 0
    done
    if ! kill -0 "$pid" 2>/dev/null && grep -q "address already in use" "$dir/logs/$name.log"; then
      say "$name: port $port was taken before it could bind it; starting it on another port"
      sed -i "/^$name /d" "$dir/pids"
      continue
    fi
    die "$name did not become healthy within 60s; see $dir/logs/$name.log (then run infra/local-control-plane/down.sh)"
  done
  die "$name could not bind a free port in 3 attempts; see $dir/logs/$name.log"
}
wait_for() { # what, seconds, command...
  local what="$1" secs="$2"; shift 2
  for ((i = 0; i < secs * 4; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "$what did not become ready within ${secs}s; see $dir/logs/ (then run infra/local-control-plane/down.sh)"
}

say "starting etcd on 127.0.0.1:$p_etcd"
launch etcd "$bin/etcd" --name ripple --data-dir "$dir/etcd" \
  --listen-client-urls "http://127.0.0.1:$p_etcd" --advertise-client-urls "http://127.0.0.1:$p_etcd" \
  --listen-peer-urls "http://127.0.0.1:$p_peer" --initial-advertise-peer-urls "http://127.0.0.1:$p_peer" \
  --initial-cluster "ripple=http://127.0.0.1:$p_peer" --unsafe-no-fsync --log-level warn
wait_for etcd 30 curl -fsS "http://127.0.0.1:$p_etcd/health"

# NodeRestriction as on a real cluster (kubeadm enables it): what a kubelet's identity may write is limited, and
# ops-lifecycle's webhook must leave a kubelet's pods/status writes alone or they are refused. KWOK manages only the
# nodes annotated below, so a test can own a node and act as its kubelet (impersonating system:node:<name>).
# It listens on loopback only, but advertises the real node's bridge address (and reaches the real node's kubelet
# for logs and exec by its InternalIP: no DNS here resolves the node's name): that is the endpoint of the
# `kubernetes` Service, the address a pod's in-cluster client reaches through kube-proxy, and node-up.sh forwards
# it to loopback. Without a real node no pod runs a container, so nothing dials it.
# shellcheck source=node.env
source "$here/node.env"
say "starting kube-apiserver on https://127.0.0.1:$p_api"
launch kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$p_etcd" \
  --bind-address 127.0.0.1 --advertise-address "$REAL_NODE_IP" --secure-port "$p_api" \
  --cert-dir "$dir/certs" --token-auth-file "$dir/tokens.csv" --authorization-mode Node,RBAC \
  --enable-admission-plugins NodeRestriction \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
  --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --requestheader-client-ca-file "$dir/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
  --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
  --requestheader-extra-headers-prefix X-Remote-Extra- \
  --proxy-client-cert-file "$dir/front-proxy-client.crt" --proxy-client-key-file "$dir/front-proxy-client.key" \
  --watch-cache-sizes podtemplates#0  # PodTemplates watch etcd directly, so tests can force a real 410 by compacting
cat > "$dir/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: ripple-sandbox
  cluster:
    server: https://127.0.0.1:$p_api
    insecure-skip-tls-verify: true
users:
- name: ripple-admin
  user:
    token: $token
contexts:
- name: ripple-sandbox
  context: {cluster: ripple-sandbox, user: ripple-admin}
current-context: ripple-sandbox
KC
wait_for kube-apiserver 90 kubectl get --raw /readyz

say "starting kube-controller-manager, kube-scheduler and kwok"
start_serving kube-controller-manager 'https://127.0.0.1:{PORT}/healthz' "$bin/kube-controller-manager" --kubeconfig "$dir/kubeconfig" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port '{PORT}' --service-account-private-key-file "$dir/sa.key" \
  --root-ca-file "$dir/certs/apiserver.crt" --authorization-always-allow-paths /healthz,/readyz,/livez,/metrics \
  --concurrent-gc-syncs 5 --concurrent-deployment-syncs 10 --concurrent-replicaset-syncs 10 \
  --horizontal-pod-autoscaler-sync-period 5s  # HPAs (KEDA's end-to-end test) act within seconds, not 15 s
start_serving kube-scheduler 'https://127.0.0.1:{PORT}/healthz' "$bin/kube-scheduler" --kubeconfig "$dir/kubeconfig" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port '{PORT}' --authorization-always-allow-paths /healthz,/readyz,/livez,/metrics
start_serving kwok 'http://127.0.0.1:{PORT}/healthz' "$bin/kwok" --kubeconfig "$dir/kubeconfig" --config "$bin/kwok-stages.yaml" --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --server-address '127.0.0.1:{PORT}' --node-lease-duration-seconds 40

say "creating $nodes fake nodes"
for ((n = 0; n < nodes; n++)); do
  kubectl apply -f - >/dev/null <<NODE
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$n
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: kwok-node-$n, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
status:
  allocatable: {cpu: "64", memory: 512Gi, pods: "250", nvidia.com/gpu: "8"}
  capacity: {cpu: "64", memory: 512Gi, pods: "250", nvidia.com/gpu: "8"}
NODE
done
wait_for "the default ServiceAccount" 60 kubectl get serviceaccount default -n default
wait_for "Ready nodes" 60 bash -c "'$bin/kubectl' --kubeconfig '$dir/kubeconfig' wait --for=condition=Ready node/kwok-node-0 --timeout=1s"
cat > "$dir/env" <<ENV
KUBECONFIG=$dir/kubeconfig
RIPPLE_SANDBOX_ETCD=http://127.0.0.1:$p_etcd
ENV
[[ "${RIPPLE_REAL_NODE:-}" != 1 ]] || bash "$here/node-up.sh"  # opt-in: a real node beside the KWOK nodes
say "ready: kubeconfig at $dir/kubeconfig (kubectl --kubeconfig $dir/kubeconfig get nodes)"
