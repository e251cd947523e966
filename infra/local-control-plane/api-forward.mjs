// Forwards the real node's bridge address to the sandbox's kube-apiserver, which listens on loopback only
// (node-up.sh). The apiserver advertises the bridge address (up.sh), so the `kubernetes` Service's endpoint is
// here, and a pod's in-cluster client reaches the API server through kube-proxy as on a real cluster. TLS passes
// through untouched: the pod verifies the apiserver's own certificate with its ServiceAccount's ca.crt.
// Usage: node api-forward.mjs LISTEN_HOST PORT   (forwards LISTEN_HOST:PORT to 127.0.0.1:PORT)
/* global process, console -- run by node-up.sh with plain Node, outside the TypeScript project */
import net from 'node:net';

const [host, portText] = process.argv.slice(2);
const port = Number(portText);
if (!host || !Number.isInteger(port) || port <= 0) {
  console.error('usage: node api-forward.mjs LISTEN_HOST PORT');
  process.exit(2);
}
net
  .createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    for (const s of [client, upstream]) s.on('error', () => { client.destroy(); upstream.destroy(); });
  })
  .listen(port, host, () => console.log(`forwarding ${host}:${port} to 127.0.0.1:${port}`));
