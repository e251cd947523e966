import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * A loopback TCP proxy in front of the API server, so a test can cut every connection a client holds
 * (and refuse new ones for a while) without touching the server: a real network cut, as a client sees it.
 * Or blackhole it: connections are accepted and never answered, as behind a dead load balancer or a
 * dropped NAT entry, where a client without its own timeouts waits for ever.
 */
export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private refusing = false;
  private silent = false;
  /** Open connections paused by blackhole(), resumed by resume(). */
  private readonly held = new Set<net.Socket>();
  private server?: net.Server;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      if (this.silent) {
        // Held open, nothing forwarded, never closed from this side until stop()/cut().
        this.sockets.add(client);
        client.on('close', () => this.sockets.delete(client));
        client.on('error', () => client.destroy());
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => {
          this.sockets.delete(s);
          this.held.delete(s);
        });
        s.on('error', () => s.destroy());
      }
      this.forward(client, upstream);
      this.forward(upstream, client);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /**
   * Copies `from` to `to` unless the proxy is blackholed: then `from` is paused with the chunk put back,
   * so an open connection (a pooled keep-alive one too) goes silent in both directions, and nothing is
   * lost — its bytes flow again on resume(), as TCP retransmits once a path comes back.
   */
  private forward(from: net.Socket, to: net.Socket): void {
    from.on('data', (chunk: Buffer) => {
      if (this.silent) {
        from.pause();
        from.unshift(chunk);
        this.held.add(from);
        return;
      }
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => (this.silent ? this.held.add(from) : from.resume()));
      }
    });
    from.on('end', () => to.end());
  }

  /** Cuts every open connection and refuses new ones until resume(). */
  cut(): void {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
  }

  /**
   * New connections are accepted and never answered (not even the TLS handshake) until resume(), and
   * open connections stop forwarding in both directions (a keep-alive connection must not be a way
   * around the outage). Open connections carry on after resume(); connections accepted meanwhile stay
   * silent after resume() too, as a request lost in a blackhole stays lost: only the client's own
   * timeouts end them.
   */
  blackhole(): void {
    this.silent = true;
  }

  resume(): void {
    this.refusing = false;
    this.silent = false;
    for (const s of this.held) s.resume();
    this.held.clear();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** A copy of `kc` whose current cluster is reached through this proxy. */
  kubeConfig(kc: KubeConfig): KubeConfig {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const proxied = new KubeConfig();
    proxied.loadFromOptions({
      clusters: [{ ...cluster, server: `https://127.0.0.1:${this.port}` }],
      users: kc.getUsers(),
      contexts: kc.getContexts(),
      currentContext: kc.getCurrentContext(),
    });
    return proxied;
  }

  static forServer(kc: KubeConfig): TcpProxy {
    const url = new URL(kc.getCurrentCluster()!.server);
    return new TcpProxy({ host: url.hostname, port: Number(url.port || 443) });
  }
}
