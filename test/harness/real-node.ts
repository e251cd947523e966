import { inject } from 'vitest';
import { startRealNode } from '../../sandbox/real-node.js';

/** Starts the sandbox's real node (at once when it runs) and returns the sandbox's directory. */
export async function useRealNode(): Promise<string> {
  const sandboxDir = inject('sandboxDir');
  if (!sandboxDir) throw new Error('the real node runs only in Ripple’s own sandbox (RIPPLE_TEST_KUBECONFIG is set)');
  await startRealNode(sandboxDir);
  return sandboxDir;
}
