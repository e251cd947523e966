import type { KubeConfig } from '@kubernetes/client-node';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import type { AdmissionWebhookDefinition, LabelSelector } from './types.js';

const PATH = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
const FIELD_MANAGER = 'ripple-webhook';

export interface RegistrationInput {
  /** The MutatingWebhookConfiguration's name. */
  name: string;
  /** Base URL the API server dials, e.g. https://127.0.0.1:9443 (no trailing slash). */
  baseUrl: string;
  /** PEM of every CA the API server should trust for it (old and new during a CA rotation). */
  caBundlePem: string;
  webhooks: readonly AdmissionWebhookDefinition[];
  /** Applied to every webhook, over its own (a test confines the webhooks to its namespace this way). */
  namespaceSelector?: LabelSelector;
}

/**
 * The MutatingWebhookConfiguration for the webhooks, registered by URL: the API server verifies the serving
 * certificate against caBundle (there is no way to skip verification for a webhook). sideEffects None by default:
 * the webhooks only compute a patch, so dry-run requests may call them; one that writes declares NoneOnDryRun.
 */
export function mutatingWebhookConfiguration(input: RegistrationInput): Record<string, unknown> {
  const caBundle = Buffer.from(input.caBundlePem).toString('base64');
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: input.name, labels: { 'app.kubernetes.io/part-of': 'ripple', 'app.kubernetes.io/component': 'webhook' } },
    webhooks: input.webhooks.map((w) => ({
      name: w.name,
      admissionReviewVersions: ['v1'],
      clientConfig: { url: `${input.baseUrl}/${w.path}`, caBundle },
      rules: w.rules.map((r) => ({ scope: 'Namespaced', ...r })),
      failurePolicy: w.failurePolicy,
      matchPolicy: 'Equivalent',
      sideEffects: w.sideEffects ?? 'None',
      timeoutSeconds: w.timeoutSeconds,
      reinvocationPolicy: w.reinvocationPolicy ?? 'Never',
      objectSelector: w.objectSelector ?? {},
      namespaceSelector: input.namespaceSelector ?? w.namespaceSelector ?? {},
    })),
  };
}

/** Creates or updates the configuration (server-side apply: the fields Ripple owns, nothing else). */
export async function applyRegistration(kc: KubeConfig, input: RegistrationInput): Promise<void> {
  await kubeRequest(kc, `${PATH}/${encodeURIComponent(input.name)}`, {
    method: 'PATCH',
    query: { fieldManager: FIELD_MANAGER, force: true },
    body: mutatingWebhookConfiguration(input),
    contentType: 'application/apply-patch+yaml',
  });
}

/** Removes the configuration; gone already counts as done. */
export async function deleteRegistration(kc: KubeConfig, name: string): Promise<void> {
  try {
    await kubeRequest(kc, `${PATH}/${encodeURIComponent(name)}`, { method: 'DELETE' });
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}
