/** Label selectors, to tell which variant (Deployment) a pod belongs to. */
import type { V1LabelSelector } from '@kubernetes/client-node';

/** Kubernetes semantics: every matchLabels entry and every expression must hold; an empty selector matches nothing here. */
export function selectorMatches(selector: V1LabelSelector | undefined, labels: Readonly<Record<string, string>> | undefined): boolean {
  if (!selector) return false;
  const l = labels ?? {};
  const pairs = Object.entries(selector.matchLabels ?? {});
  const exprs = selector.matchExpressions ?? [];
  if (pairs.length === 0 && exprs.length === 0) return false;
  for (const [k, v] of pairs) if (l[k] !== v) return false;
  for (const e of exprs) {
    const has = Object.prototype.hasOwnProperty.call(l, e.key);
    const value = l[e.key];
    switch (e.operator) {
      case 'In':
        if (!has || !(e.values ?? []).includes(value ?? '')) return false;
        break;
      case 'NotIn':
        if (has && (e.values ?? []).includes(value ?? '')) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/**
 * The selector as the API's `labelSelector` query parameter, so pods are listed per Deployment rather
 * than the whole namespace (issue 14 scenario 9). Undefined for an empty selector (it selects nothing
 * here) or an operator the API does not know.
 */
export function labelSelectorQuery(selector: V1LabelSelector | undefined): string | undefined {
  if (!selector) return undefined;
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = `(${(e.values ?? []).join(',')})`;
    if (e.operator === 'In') parts.push(`${e.key} in ${values}`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin ${values}`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
    else return undefined;
  }
  return parts.length > 0 ? parts.join(',') : undefined;
}

/**
 * A selector as the API writes it in a scale subresource's `status.selector` (`a=b,c in (d,e),!f`),
 * back into its structured form. Undefined when empty or when a term is not understood: then no pod
 * is the target's, rather than the wrong ones.
 */
export function parseSelectorString(text: string | undefined): V1LabelSelector | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const matchLabels: Record<string, string> = {};
  const matchExpressions: NonNullable<V1LabelSelector['matchExpressions']> = [];
  // Commas inside `in (…)` belong to the term.
  for (const raw of text.split(/,(?![^(]*\))/)) {
    const term = raw.trim();
    let m: RegExpExecArray | null;
    if ((m = /^([^\s=!(),]+)\s*(?:==?)\s*([\w.-]*)$/.exec(term))) matchLabels[m[1]!] = m[2]!;
    else if ((m = /^([^\s=!(),]+)\s*!=\s*([\w.-]*)$/.exec(term))) matchExpressions.push({ key: m[1]!, operator: 'NotIn', values: [m[2]!] });
    else if ((m = /^([^\s=!]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term))) {
      matchExpressions.push({ key: m[1]!, operator: m[2] === 'in' ? 'In' : 'NotIn', values: m[3]!.split(',').map((v) => v.trim()) });
    } else if ((m = /^!([^\s=!]+)$/.exec(term))) matchExpressions.push({ key: m[1]!, operator: 'DoesNotExist' });
    else if ((m = /^([^\s=!(),]+)$/.exec(term))) matchExpressions.push({ key: m[1]!, operator: 'Exists' });
    else return undefined;
  }
  return { ...(Object.keys(matchLabels).length > 0 ? { matchLabels } : {}), ...(matchExpressions.length > 0 ? { matchExpressions } : {}) };
}

export interface PodRef {
  name: string;
  labels?: Readonly<Record<string, string>>;
  /** The ReplicaSet that controls the pod (its controller ownerReference), when there is one. */
  replicaSet?: string;
}

/** A Deployment's ReplicaSets are named `<deployment>-<pod-template-hash>`, and their pods carry the hash. */
function ownedBy(p: PodRef, variantName: string): boolean {
  const hash = p.labels?.['pod-template-hash'];
  return hash !== undefined && p.replicaSet === `${variantName}-${hash}`;
}

/**
 * Pod name → variant, for the pods of one namespace. A pod several Deployments' selectors match
 * belongs to the one whose ReplicaSet controls it (overlapping selectors would otherwise leave the
 * pods out, and the model would look in transition for ever); one no owner settles is left out
 * rather than counted twice.
 */
export function mapPodsToVariants(pods: readonly PodRef[], variants: readonly { variantName: string; selector: V1LabelSelector | undefined }[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of pods) {
    let owners = variants.filter((v) => selectorMatches(v.selector, p.labels));
    if (owners.length > 1) owners = owners.filter((v) => ownedBy(p, v.variantName));
    if (owners.length === 1) out.set(p.name, owners[0]!.variantName);
  }
  return out;
}
