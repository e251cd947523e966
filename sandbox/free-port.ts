import net from 'node:net';

/** Asks the kernel for a free loopback port (there is a tiny race until the caller binds it). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      if (addr === null || typeof addr === 'string') {
        server.close();
        reject(new Error('could not read the port the kernel assigned'));
        return;
      }
      server.close(() => resolve(addr.port));
    });
  });
}
