import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * A loopback TCP proxy in front of the API server that makes it slow for one request: once armed, the next
 * bytes a client sends (a request, TLS and all: the proxy cannot read it, it only delays it) are held for a
 * while and then delivered, even if the client gave up meanwhile. That is a server that already has a write
 * and applies it late (a slow etcd, an overloaded API server): an abort on the client side does not cancel
 * it. The connection to the server stays open until it answers, so the server never sees its client leave
 * (Go's HTTP server cancels a request whose client hung up).
 */
export class DelayProxy {
  private readonly sockets = new Set<net.Socket>();
  private server?: net.Server;
  private armedMs: number | undefined;
  private answered: (() => void) | undefined;
  /** Resolves when the held request was delivered and the server answered it. */
  delivered: Promise<void> = Promise.resolve();
  /** When the held bytes were delivered (ms, local clock); 0 before. */
  deliveredAt = 0;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => this.serve(client));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** The next bytes any client sends are held `ms` before they reach the server. */
  holdNext(ms: number): void {
    this.armedMs = ms;
    this.delivered = new Promise<void>((resolve) => (this.answered = resolve));
  }

  private serve(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => s.destroy());
    }
    let held: Buffer[] | undefined;
    let clientGone = false;
    let waitingForAnswer = false;
    client.on('data', (chunk: Buffer) => {
      if (held) {
        held.push(chunk);
        return;
      }
      if (this.armedMs === undefined) {
        upstream.write(chunk);
        return;
      }
      const ms = this.armedMs;
      this.armedMs = undefined;
      held = [chunk];
      setTimeout(() => {
        for (const c of held ?? []) upstream.write(c);
        held = undefined;
        this.deliveredAt = Date.now();
        waitingForAnswer = true;
        // Should the server never answer, the held connection still ends.
        setTimeout(() => upstream.destroy(), 30_000).unref();
      }, ms);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (waitingForAnswer) {
        waitingForAnswer = false;
        this.answered?.();
        this.answered = undefined;
        if (clientGone) {
          upstream.destroy();
          return;
        }
      }
      if (!clientGone) client.write(chunk);
    });
    // A client that leaves while its request is held leaves the server side open until that request was answered.
    client.on('close', () => {
      clientGone = true;
      if (!held && !waitingForAnswer) upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Writes a copy of the kubeconfig at `kubeconfigPath` whose current cluster is reached through this proxy. */
  writeKubeConfig(kubeconfigPath: string, to: string): void {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error(`${kubeconfigPath} has no current cluster`);
    const proxied = new KubeConfig();
    proxied.loadFromOptions({
      clusters: [{ ...cluster, server: `https://127.0.0.1:${this.port}` }],
      users: kc.getUsers(),
      contexts: kc.getContexts(),
      currentContext: kc.getCurrentContext(),
    });
    writeFileSync(to, proxied.exportConfig());
  }

  static forServer(kubeconfigPath: string): DelayProxy {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const url = new URL(kc.getCurrentCluster()!.server);
    return new DelayProxy({ host: url.hostname, port: Number(url.port || 443) });
  }
}
