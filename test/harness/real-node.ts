import { inject } from 'vitest';
import { startRealNode } from '../../sandbox/real-node.js';

/** Starts the sandbox's real node (at once when it runs) and returns the sandbox's directory (by default the test run's). */
export async function useRealNode(dir?: string): Promise<string> {
  const sandboxDir = dir ?? inject('sandboxDir');
  if (!sandboxDir) throw new Error('the real node runs only in Ripple’s own sandbox (RIPPLE_TEST_KUBECONFIG is set)');
  await startRealNode(sandboxDir);
  return sandboxDir;
}
