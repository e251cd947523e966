import net from 'node:net';

/**
 * A loopback TCP proxy in front of Redis that can lose one reply: once armed with a marker, the first
 * request carrying it is forwarded, and the next reply of that connection that looks like `replyPrefix`
 * is swallowed and the connection cut. Redis has executed the command; the client never hears so, and
 * ioredis sends it again on its new connection (autoResendUnfulfilledCommands). That is what a
 * connection reset or a `kill -9` between a script's execution and its reply does, made deterministic.
 */
export class ReplyDropProxy {
  private readonly sockets = new Set<net.Socket>();
  private server?: net.Server;
  private marker: Buffer | undefined;
  private replyPrefix = '';
  private refuseAfterDrop = false;
  private refusing = false;
  /** How many replies were dropped. */
  dropped = 0;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      let dropNextReply = false;
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.on('data', (chunk: Buffer) => {
        if (this.marker && chunk.includes(this.marker)) {
          this.marker = undefined;
          dropNextReply = true;
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (dropNextReply && chunk.toString('latin1').includes(this.replyPrefix)) {
          dropNextReply = false;
          this.dropped++;
          if (this.refuseAfterDrop) this.refusing = true;
          client.destroy();
          upstream.destroy();
          return;
        }
        client.write(chunk);
      });
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /**
   * Drops the reply (starting with `replyPrefix`, RESP) to the next request that contains `marker`. With
   * `refuseAfterDrop`, new connections are then refused until allow(): the client's resend waits, as it does
   * while a partition lasts, and the case can run something else against Redis before it arrives.
   */
  arm(marker: string, replyPrefix: string, opts: { refuseAfterDrop?: boolean } = {}): void {
    this.marker = Buffer.from(marker);
    this.replyPrefix = replyPrefix;
    this.refuseAfterDrop = opts.refuseAfterDrop ?? false;
  }

  /** Accepts connections again (after a drop armed with `refuseAfterDrop`). */
  allow(): void {
    this.refusing = false;
  }

  async stop(): Promise<void> {
    this.refusing = true;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
