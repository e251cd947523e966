import net from 'node:net';

/**
 * Ports this process has handed out. The kernel gives a closed port out again (about one draw in six repeats an
 * earlier one over a few thousand draws here), so a caller drawing several before it binds them could get the same
 * one twice: the cold CI's KEDA adapter died so ('bind: address already in use' on the operator's metrics port).
 */
const handedOut = new Set<number>();

/**
 * Asks the kernel for a free loopback port, never one this process handed out before (there is still a tiny race
 * with other processes until the caller binds it).
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = await kernelPort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('freePort: the kernel offered only ports this process has already handed out, 100 times');
}

function kernelPort(): Promise<number> {
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
