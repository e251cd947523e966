/**
 * What a reconcile last wrote to a ModelServing and its children, by resourceVersion per resource: the
 * expectations that keep children-cache.ts from planning on a cache older than our own writes (of the
 * children, and of the ModelServing's status and finalizers).
 * Kept in Redis (not in the process), so a reconcile on another worker process sees them too; they
 * expire after MARKS_TTL_SECONDS, long after any watch has delivered the writes they name.
 */
import { isNewer, isOrdered } from '../../kube/resource-version.js';
import { z } from 'zod';
import { parseJson } from '../../kube/json.js';
import type { RedisClient } from '../../queue/connection.js';

export const CHILD_RESOURCES = ['pods', 'services', 'controllerrevisions'] as const;
export type ChildResource = (typeof CHILD_RESOURCES)[number];
/** What the worker-local cache holds: the children and the ModelServings themselves. */
export const CACHED_RESOURCES = [...CHILD_RESOURCES, 'modelservings'] as const;
export type CachedResource = (typeof CACHED_RESOURCES)[number];

export interface WriteMarks {
  /** The newest resourceVersion our writes were answered with, per resource. */
  versions: Partial<Record<CachedResource, string>>;
  /** A write whose resulting version is not known (a 409, a 404, a lifecycle step): list next time. */
  unknown: boolean;
}

export const NO_MARKS: WriteMarks = { versions: {}, unknown: false };
const MARKS_TTL_SECONDS = 600;

const marksSchema = z.object({
  versions: z.object({ pods: z.string().optional(), services: z.string().optional(), controllerrevisions: z.string().optional(), modelservings: z.string().optional() }),
  unknown: z.boolean(),
});


/** Collects the versions one reconcile's writes were answered with. */
export class WriteTracker {
  readonly marks: WriteMarks = { versions: {}, unknown: false };
  private wrote = false;

  note(kind: CachedResource, resourceVersion: string | undefined): void {
    this.wrote = true;
    if (resourceVersion === undefined || !isOrdered(resourceVersion)) {
      this.marks.unknown = true;
      return;
    }
    const seen = this.marks.versions[kind];
    if (seen === undefined || isNewer(resourceVersion, seen)) this.marks.versions[kind] = resourceVersion;
  }

  noteUnknown(): void {
    this.wrote = true;
    this.marks.unknown = true;
  }

  get empty(): boolean {
    return !this.wrote;
  }
}

/**
 * The marks to keep after a reconcile: the newest version per resource of the previous marks and this
 * reconcile's writes. `unknown` is cleared by a reconcile that listed (it saw whatever that write
 * left), unless this reconcile's own writes set it again. Undefined when nothing needs saving.
 */
export function nextMarks(previous: WriteMarks, listed: boolean, written: WriteTracker): WriteMarks | undefined {
  const clearUnknown = listed && previous.unknown;
  if (written.empty && !clearUnknown) return undefined;
  const versions: WriteMarks['versions'] = { ...previous.versions };
  for (const kind of CACHED_RESOURCES) {
    const v = written.marks.versions[kind];
    const old = versions[kind];
    if (v !== undefined && (old === undefined || isNewer(v, old))) versions[kind] = v;
  }
  return { versions, unknown: written.marks.unknown || (previous.unknown && !listed) };
}

export function writeMarksStore(redis: RedisClient, prefix: string, namespace: string, name: string) {
  const key = `${prefix}:modelserving:written:${namespace}/${name}`;
  return {
    async read(): Promise<WriteMarks> {
      const raw = await redis.get(key);
      if (raw === null) return NO_MARKS;
      const parsed = marksSchema.safeParse(parseJson(raw));
      // Unreadable marks: list, as after a write of unknown outcome.
      return parsed.success ? parsed.data : { versions: {}, unknown: true };
    },
    async save(marks: WriteMarks): Promise<void> {
      await redis.set(key, JSON.stringify(marks), 'EX', MARKS_TTL_SECONDS);
    },
    async remove(): Promise<void> {
      await redis.del(key);
    },
  };
}
