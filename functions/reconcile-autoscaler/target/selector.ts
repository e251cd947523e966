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
 * Pod name → variant, for the pods of one namespace. A pod matched by several Deployments' selectors
 * is left out rather than counted twice.
 */
export function mapPodsToVariants(
  pods: readonly { name: string; labels?: Readonly<Record<string, string>> }[],
  variants: readonly { variantName: string; selector: V1LabelSelector | undefined }[],
): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of pods) {
    const owners = variants.filter((v) => selectorMatches(v.selector, p.labels));
    if (owners.length === 1) out.set(p.name, owners[0]!.variantName);
  }
  return out;
}
