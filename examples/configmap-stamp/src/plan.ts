import { createHash } from 'node:crypto';

/** The annotation this function owns: a digest of the ConfigMap's data, so a consumer can see which data it was given. */
export const STAMP_ANNOTATION = 'example.ripple.dev/stamp';
/** Only ConfigMaps carrying this label are stamped. */
export const STAMP_LABEL = 'example.ripple.dev/stamp';

interface ConfigMapLike {
  metadata: { resourceVersion?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

/** sha256 of the data, keys sorted, so the stamp depends on the content and not on the order the API server sent. */
export function stampOf(data: Record<string, string> = {}): string {
  const hash = createHash('sha256');
  for (const key of Object.keys(data).sort()) hash.update(`${key}\0${data[key]}\0`);
  return `sha256:${hash.digest('hex').slice(0, 16)}`;
}

/**
 * The merge patch that brings the stamp up to date, or nothing when it already is. It carries the
 * resourceVersion it was planned from: a reconcile that read stale data gets a 409 instead of stamping it.
 */
export function planStamp(cm: ConfigMapLike): { stamp: string; patch: object } | undefined {
  const stamp = stampOf(cm.data);
  if (cm.metadata.annotations?.[STAMP_ANNOTATION] === stamp) return undefined;
  return { stamp, patch: { metadata: { resourceVersion: cm.metadata.resourceVersion, annotations: { [STAMP_ANNOTATION]: stamp } } } };
}
