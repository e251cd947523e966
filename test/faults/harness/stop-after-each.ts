import { afterEach } from 'vitest';

type Stoppable = { stop(): Promise<void> } | { close(): Promise<void> };

/**
 * Registers an afterEach that stops every resource handed to the returned `track`, the last started
 * first (a case's workers before the proxy before the Redis they reach), so each fault case declares its
 * processes where it starts them instead of in module-level variables.
 */
export function stopAfterEach(): <T extends Stoppable>(resource: T) => T {
  const started: Stoppable[] = [];
  afterEach(async () => {
    for (const r of started.splice(0).reverse()) await ('close' in r ? r.close() : r.stop());
  });
  return (resource) => {
    started.push(resource);
    return resource;
  };
}
