import { z } from 'zod';
import { parseKubeObject, statusSchema, type KubeObject } from '../kube/object.js';

/**
 * A BOOKMARK carries no object, only the resourceVersion the server has reached for this watch
 * (metadata.name is absent, so kubeObjectSchema would refuse it): the type must be read first.
 */
const bookmarkSchema = z.object({ metadata: z.object({ resourceVersion: z.string().min(1) }).passthrough() }).passthrough();

/** What one line of a watch stream means to the list+watch loop. */
export type WatchLine =
  | { kind: 'object'; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: KubeObject }
  | { kind: 'bookmark'; resourceVersion: string }
  | { kind: 'error'; code?: number; message?: string; raw: unknown }
  /** A type this client does not know, or a payload that is not what its type promises. */
  | { kind: 'invalid'; type: string; reason: string };

export function parseWatchLine(type: string, raw: unknown): WatchLine {
  switch (type) {
    case 'BOOKMARK': {
      const parsed = bookmarkSchema.safeParse(raw);
      return parsed.success ? { kind: 'bookmark', resourceVersion: parsed.data.metadata.resourceVersion } : { kind: 'invalid', type, reason: 'bookmark without metadata.resourceVersion' };
    }
    case 'ERROR': {
      const status = statusSchema.safeParse(raw);
      return { kind: 'error', code: status.success ? status.data.code : undefined, message: status.success ? status.data.message : undefined, raw };
    }
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED': {
      const parsed = parseKubeObject(raw);
      return parsed.success ? { kind: 'object', type, object: parsed.data } : { kind: 'invalid', type, reason: 'object without metadata.name' };
    }
    default:
      return { kind: 'invalid', type, reason: 'unknown event type' };
  }
}
