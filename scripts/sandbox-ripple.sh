#!/usr/bin/env bash
# Runs Ripple inside the sandbox as users run it in a cluster: Ripple's image (built here from
# infra/deploy/Dockerfile, infra/images/build.sh ripple) installed by its Helm chart in the scaled mode, every
# pod a real container on the sandbox's real node. Start the sandbox with its node first:
#   RIPPLE_REAL_NODE=1 npm run sandbox:up
#   npm run sandbox:ripple        # this script; again to upgrade after a change (the image is rebuilt)
# Redis runs on the host (no image is pulled here), bound to the node's bridge, behind a Service without a
# selector: the shape of a managed Redis outside the cluster. `npm run sandbox:down` stops it with the node.
# Options: RIPPLE_NAMESPACE (default ripple-system), RIPPLE_RELEASE (default ripple), extra `helm` arguments.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lcp="$root/infra/local-control-plane"
bin="${RIPPLE_CONTROL_PLANE_BIN:-$root/.cache/control-plane/bin}"   # as infra/local-control-plane/paths.sh
dir="${RIPPLE_SANDBOX_DIR:-$root/.sandbox}"
# shellcheck source=../infra/local-control-plane/node.env
source "$lcp/node.env"
ns="${RIPPLE_NAMESPACE:-ripple-system}"
release="${RIPPLE_RELEASE:-ripple}"
nd="$dir/node"
say() { printf 'sandbox-ripple: %s\n' "$*"; }
die() { printf 'sandbox-ripple: %s\n' "$*" >&2; exit 1; }
kubectl() { "$bin/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }

[[ -f "$nd/pids" ]] || die "no real node in $dir: start the sandbox with RIPPLE_REAL_NODE=1 npm run sandbox:up"
[[ -x "$bin/helm" ]] || bash "$lcp/build-helm.sh"
bash "$root/infra/images/build.sh" ripple
bash "$lcp/node-up.sh"   # loads the image into the running node when it changed
version="$(node -p 'require(process.argv[1]).version' "$root/package.json")"

# Redis on the bridge address, with a password kept beside the node's state; node-down.sh stops it.
if ! { [[ -f "$nd/ripple-redis.port" ]] && redis-cli -h "$REAL_NODE_IP" -p "$(cat "$nd/ripple-redis.port")" --no-auth-warning -a "$(cat "$nd/ripple-redis.password")" ping >/dev/null 2>&1; }; then
  port="$(node -e 'const s = require("node:net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });')"
  ( umask 077; openssl rand -hex 16 > "$nd/ripple-redis.password" )
  echo "$port" > "$nd/ripple-redis.port"
  mkdir -p "$nd/ripple-redis"
  setsid redis-server --bind "$REAL_NODE_IP" --port "$port" --dir "$nd/ripple-redis" --save '' --appendonly no \
    --maxmemory-policy noeviction --requirepass "$(cat "$nd/ripple-redis.password")" > "$nd/logs/ripple-redis.log" 2>&1 < /dev/null &
  echo "ripple-redis $!" >> "$nd/pids"
  for _ in $(seq 1 40); do redis-cli -h "$REAL_NODE_IP" -p "$port" --no-auth-warning -a "$(cat "$nd/ripple-redis.password")" ping >/dev/null 2>&1 && break; sleep 0.25; done
  say "Redis on $REAL_NODE_IP:$port"
fi
port="$(cat "$nd/ripple-redis.port")"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: redis, namespace: $ns}
spec: {ports: [{name: redis, port: 6379, targetPort: $port}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: redis-host, namespace: $ns, labels: {kubernetes.io/service-name: redis}}
addressType: IPv4
endpoints: [{addresses: ["$REAL_NODE_IP"], conditions: {ready: true}}]
ports: [{name: redis, port: $port, protocol: TCP}]
YAML
kubectl -n "$ns" create secret generic "$release-redis-url" --dry-run=client -o yaml \
  --from-literal=url="redis://:$(cat "$nd/ripple-redis.password")@redis.$ns.svc.cluster.local:6379" | kubectl apply -f - >/dev/null
kubectl -n "$ns" get secret "$release-ops-token" >/dev/null 2>&1 ||
  kubectl -n "$ns" create secret generic "$release-ops-token" --from-literal=token="$(openssl rand -hex 24)" >/dev/null

say "installing charts/ripple as $release in $ns (scaled mode, ripple.local/ripple:$version on $REAL_NODE_NAME)"
"$bin/helm" --kubeconfig "$dir/kubeconfig" upgrade --install "$release" "$root/charts/ripple" -n "$ns" --wait --timeout 10m \
  --set mode=scaled --set image.repository=ripple.local/ripple --set image.tag="$version" --set image.pullPolicy=Never \
  --set redis.deploy=false --set redis.existingSecret="$release-redis-url" --set opsToken.existingSecret="$release-ops-token" \
  --set-string "nodeSelector.kubernetes\.io/hostname=$REAL_NODE_NAME" \
  --set "tolerations[0].key=$REAL_NODE_TAINT_KEY" --set "tolerations[0].operator=Exists" --set "tolerations[0].effect=NoSchedule" \
  "$@"
kubectl -n "$ns" get pods -o wide
ops_ip="$(kubectl -n "$ns" get pods -l app.kubernetes.io/component=ops -o jsonpath='{.items[0].status.podIP}')"
say "ready. The dashboard and metrics from this machine: http://$ops_ip:8081/ (the ops token: kubectl -n $ns get secret $release-ops-token -o jsonpath='{.data.token}' | base64 -d)"
