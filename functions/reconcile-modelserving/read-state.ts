/**
 * What a reconcile plans from: the ModelServing and its children, from the worker-local cache when it
 * has seen this function's last writes to them (children-cache.ts, write-marks.ts), else a GET and
 * three LISTs from the API server (observe.ts).
 */
import { parseModelServing, type ParseResult } from '../../api/modelserving.js';
import { kubeObjectSchema, type KubeObject } from '../../kube/object.js';
import type { HandlerContext } from '../../runtime/function.js';
import { childrenCacheFor } from './children-cache.js';
import { RECONCILE_MODELSERVING, type ModelServingConfig } from './config.js';
import { listChildren, readModelServing, type Children } from './observe.js';
import type { ClusterCapabilities } from './plan/gang.js';
import type { WriteMarks } from './write-marks.js';

export type ReadState =
  | { gone: true }
  | {
      gone: false;
      /** The ModelServing as stored (parsed by the caller). */
      raw: unknown;
      /** Whether the children come from the API server (their lists saw every earlier write). */
      listed: boolean;
      /** Its children; a rejection is observed here, so the caller may judge the ModelServing first. */
      children: Promise<Children>;
    };

/** The resourceVersion of an object read from the API server, if it has one. */
export function resourceVersionOf(raw: unknown): string | undefined {
  if (typeof raw !== 'object' || raw === null || !('metadata' in raw)) return undefined;
  const meta: unknown = raw.metadata;
  if (typeof meta !== 'object' || meta === null || !('resourceVersion' in meta)) return undefined;
  return typeof meta.resourceVersion === 'string' ? meta.resourceVersion : undefined;
}

export async function readState(
  ctx: Pick<HandlerContext, 'kc' | 'enqueue'>,
  config: ModelServingConfig,
  cluster: ClusterCapabilities,
  namespace: string,
  name: string,
  marks: WriteMarks,
): Promise<ReadState> {
  // PodGroups are not cached: with Volcano installed every reconcile reads from the API server.
  const cache = config.MODELSERVING_CHILDREN_CACHE === 'true' && !cluster.volcanoPodGroups ? childrenCacheFor(ctx.kc, namespace) : undefined;
  // Not waited for when it is down; briefly while it lists for the first time or is behind our last write.
  if (cache && (await cache.waitFor(marks))) {
    const { modelServing, ...children } = cache.read(name, (key) => ctx.enqueue(RECONCILE_MODELSERVING, key));
    if (modelServing !== undefined) return { gone: false, raw: modelServing, listed: false, children: Promise.resolve(children) };
    // Not in the cache: deleted, or created after the cache's version. Only the API server can tell.
    const raw = await readModelServing(ctx.kc, namespace, name);
    if (raw === undefined) return { gone: true };
    const rv = resourceVersionOf(raw);
    if (rv !== undefined) cache.noteListed(name, { modelservings: rv });
    return { gone: false, raw, listed: false, children: Promise.resolve(children) };
  }
  const raw = await readModelServing(ctx.kc, namespace, name);
  if (raw === undefined) return { gone: true };
  const rv = resourceVersionOf(raw);
  const children = listChildren(ctx.kc, namespace, name, cluster.volcanoPodGroups).then((listed) => {
    if (cache && listed.listedAt) cache.noteListed(name, { ...listed.listedAt, ...(rv !== undefined ? { modelservings: rv } : {}) });
    return listed;
  });
  // A rejection of the lists must not go unobserved while the ModelServing is judged.
  void children.catch(() => undefined);
  return { gone: false, raw, listed: true, children };
}

/** Deep-freezes what is shared between reconciles, so a planner that mutated it would fail loudly, not leak. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

const judged = new WeakMap<object, { read: KubeObject; parsed?: ParseResult }>();

function judgedOf(raw: unknown): { read: KubeObject; parsed?: ParseResult } {
  if (typeof raw === 'object' && raw !== null) {
    const known = judged.get(raw);
    if (known) return known;
  }
  const entry: { read: KubeObject; parsed?: ParseResult } = { read: deepFreeze(kubeObjectSchema.parse(raw)) };
  if (typeof raw === 'object' && raw !== null) judged.set(raw, entry);
  return entry;
}

/**
 * The ModelServing's metadata (`kubeObjectSchema`) and its spec judged (`parseModelServing`), once per object read:
 * a ModelServing served from the cache is the same object until its next version, and parsing it with zod on every
 * reconcile was the largest share of the function's own CPU in a converge (bench/README.md, "ModelServing converge").
 * Both are frozen, since later reconciles of the same version get the same objects.
 */
export function objectOf(raw: unknown): KubeObject {
  return judgedOf(raw).read;
}
export function parsedOf(raw: unknown): ParseResult {
  const entry = judgedOf(raw);
  return (entry.parsed ??= deepFreeze(parseModelServing(raw)));
}
