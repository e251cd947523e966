import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * Which cluster to talk to. There is deliberately no "current context" default: Ripple's main
 * command runs against its own sandbox unless a cluster is named explicitly, so it can never
 * reconcile a user's production cluster by accident.
 */
export type KubeTarget =
  | { kind: 'kubeconfig'; path: string; context?: string }
  | { kind: 'in-cluster' };

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function loadKubeConfig(target: KubeTarget): KubeConfig {
  const kc = new KubeConfig();
  if (target.kind === 'in-cluster') {
    if (!existsSync(SA_TOKEN)) {
      throw new Error(`in-cluster mode needs a ServiceAccount token at ${SA_TOKEN}; outside a Pod pass --kubeconfig`);
    }
    kc.loadFromCluster();
    return kc;
  }
  if (!existsSync(target.path)) {
    throw new Error(`kubeconfig ${target.path} does not exist; start the sandbox (npm run sandbox:up) or pass another --kubeconfig`);
  }
  kc.loadFromFile(target.path);
  if (target.context) kc.setCurrentContext(target.context);
  return kc;
}
