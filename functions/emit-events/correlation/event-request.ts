import { z } from 'zod';

/** core/v1 ObjectReference, as far as Events use it. */
export const ObjectReferenceSchema = z.object({
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  name: z.string().min(1),
  /** Empty or absent for cluster-scoped objects; their Events go to `default`, as client-go does. */
  namespace: z.string().optional(),
  uid: z.string().optional(),
  fieldPath: z.string().optional(),
  resourceVersion: z.string().optional(),
});
export type ObjectReference = z.infer<typeof ObjectReferenceSchema>;

/**
 * What a function enqueues to have an Event recorded (the emit-events job payload).
 * `source.host` should be the same for every replica of a function (empty by default): it is part
 * of every correlation key, and a per-pod host would make replicas count separately.
 */
export const EventRequestSchema = z.object({
  involvedObject: ObjectReferenceSchema,
  /** client-go drops any other type; here the payload is rejected instead. */
  type: z.enum(['Normal', 'Warning']),
  reason: z.string().min(1).max(128),
  message: z.string().max(32768),
  source: z.object({ component: z.string().min(1), host: z.string().optional() }),
  /** events.k8s.io-style fields core/v1 Events also carry; not part of any correlation key. */
  action: z.string().max(128).optional(),
  related: ObjectReferenceSchema.optional(),
});
export type EventRequest = z.infer<typeof EventRequestSchema>;

/** The core/v1 Event body to create. */
export interface CoreEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  involvedObject: ObjectReference;
  reason: string;
  message: string;
  type: 'Normal' | 'Warning';
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host?: string };
  reportingComponent: string;
  reportingInstance: string;
  action?: string;
  related?: ObjectReference;
}

export function eventNamespace(request: EventRequest): string {
  const ns = request.involvedObject.namespace;
  return ns === undefined || ns === '' ? 'default' : ns;
}

/** metav1.Time's wire form: RFC 3339 in UTC with whole seconds. */
export function formatEventTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
