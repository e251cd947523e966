import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../base/log.js';
import { listSchema, type KubeObject } from '../kube/object.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, isStatus, KubeApiError, kubeRequest } from '../kube/raw.js';
import { openWatch, type WatchStream } from '../kube/watch-stream.js';
import { apiVersionOf, collectionPath, resourceId, type ResourceRef } from '../kube/resources.js';
import { closedAtOnce, ReconnectBackoff, type ReconnectBackoffOptions } from './backoff.js';
import type { DeliveryBufferOptions } from './delivery-buffer.js';
import { DeliveryPump } from './delivery-pump.js';
import type { WatchEvent } from './events.js';
import type { WatchMetrics } from './metrics.js';
import { isMetadataOnly, project, type Projection } from './projection.js';
import { ObjectStore } from './store.js';
import { parseWatchLine } from './watch-line.js';

/** What can hold a watch down: its list/watch stream, or delivering its events to the queue. */
type DownSide = 'stream' | 'delivery';

export interface ListWatchOptions {
  kc: KubeConfig;
  resource: ResourceRef;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** The resource may not be served (its CRD is not installed): a 404 means "none", not "down". */
  optional?: boolean;
  /** How often an optional resource that is not served is asked for again (default 30 s). */
  absentRecheckMs?: number;
  log: Logger;
  /**
   * Receives events, one at a time, in order per object. A failure is retried (nothing is dropped
   * while the consumer is down); meanwhile the watch goes on and folds what piles up per object
   * (delivery-buffer.ts). A key whose delivery fails on its own is retried alone and, after
   * `delivery.maxAttempts`, dead-lettered through `onDeadLetter`.
   */
  onEvent: (event: WatchEvent) => Promise<void>;
  onDeadLetter?: (event: WatchEvent, err: unknown, attempts: number) => Promise<void>;
  delivery?: Partial<DeliveryBufferOptions>;
  metrics?: WatchMetrics;
  backoff?: ReconnectBackoffOptions;
  /** Server-side watch timeout, seconds; default random in [300, 600) like client-go's reflector. */
  watchTimeoutSeconds?: () => number;
  pageSize?: number;
  /**
   * What of each object the store and the delivery buffer keep (projection.ts); default the whole
   * object without managedFields. Metadata only also asks the API server for metadata only.
   */
  projection?: Projection;
}

/**
 * The API server's metadata-only representation (client-go's metadata client): a list answers a
 * PartialObjectMetadataList and a watch streams PartialObjectMetadata. Plain JSON follows as a
 * fallback for a server that cannot convert; the projection strips such objects here instead.
 */
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
export const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

export interface WatchHealth {
  resource: string;
  up: boolean;
  /** Epoch ms since when the watch has been down, if it is. */
  downSince?: number;
  lastError?: string;
  synced: boolean;
  /** How many full lists were made (1 at start; each 410 adds one). */
  relists: number;
  /** The resourceVersion a reconnect resumes from (the last event's or bookmark's). */
  resourceVersion?: string;
  /** Bookmarks received (optional so sources other than ListWatch need not count them). */
  bookmarks?: number;
  /** Events seen and not yet handed on (folded per object). */
  buffered?: number;
}

/** The watch stream said the resourceVersion is too old (410 Gone / Expired): relist. */
class ExpiredError extends Error {}

/**
 * List then watch one resource, forever, level-triggered (DESIGN "Watcher"): a list that yields the
 * differences against the store (synthetic deletes included), a watch from the list's
 * resourceVersion with bookmarks and a server timeout, reconnect with jittered backoff on any error,
 * relist on 410, and an inactivity timer for a connection that goes silent. client-node's informer is not
 * used: it stops for good on most errors and swallows handler errors.
 */
export class ListWatch {
  readonly store = new ObjectStore();
  private stopped = false;
  /** Cancels what is in flight when stop() is called: the relist's requests. */
  private readonly stopping = new AbortController();
  /** Ends the watch in flight at once, wherever its request is. */
  private endWatch?: () => void;
  private readonly wakers = new Set<() => void>();
  private downSince?: number;
  private lastError?: string;
  private readonly downBecause = new Map<DownSide, string>();
  private synced = false;
  private relists = 0;
  private bookmarks = 0;
  private resourceVersion?: string;
  private readonly backoff: ReconnectBackoff;
  private readonly id: string;
  private readonly pump: DeliveryPump;
  private readonly loop: Promise<void>;
  private readonly metadataOnly: boolean;
  private readonly kind: string;
  private readonly apiVersion: string;

  constructor(private readonly opts: ListWatchOptions) {
    this.backoff = new ReconnectBackoff(opts.backoff);
    this.id = resourceId(opts.resource);
    this.metadataOnly = isMetadataOnly(opts.projection);
    this.kind = opts.resource.kind;
    this.apiVersion = apiVersionOf(opts.resource);
    this.pump = new DeliveryPump({
      resource: this.id,
      deliver: opts.onEvent,
      log: opts.log,
      backoff: opts.backoff,
      delivery: opts.delivery,
      onDeadLetter: opts.onDeadLetter,
      metrics: opts.metrics,
      onDown: (why) => this.markDown('delivery', why),
      onUp: () => this.markUp('delivery'),
    });
    this.loop = this.run();
  }

  health(): WatchHealth {
    return {
      resource: this.id,
      up: this.downSince === undefined,
      downSince: this.downSince,
      lastError: this.lastError,
      synced: this.synced,
      relists: this.relists,
      resourceVersion: this.resourceVersion,
      bookmarks: this.bookmarks,
      buffered: this.pump.buffered,
    };
  }

  /** Resolves once the first list has been delivered. */
  async waitForSync(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.synced) {
      if (Date.now() > deadline) throw new Error(`watch of ${this.id} did not sync within ${timeoutMs} ms: ${this.lastError ?? 'no error yet'}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.endWatch?.();
    for (const wake of this.wakers) wake();
    // Together: a first relist may be waiting for the pump to drain.
    await Promise.all([this.loop, this.pump.stop()]);
  }

  private async run(): Promise<void> {
    let rv: string | undefined;
    while (!this.stopped) {
      try {
        if (rv === undefined) rv = await this.relist();
        const startedAt = Date.now();
        const watched = await this.watchFrom(rv);
        rv = watched.rv;
        if (this.stopped) break;
        if (closedAtOnce(Date.now() - startedAt, watched.lines)) {
          // A server or proxy that ends every watch at once would otherwise be asked again in a hot loop.
          const delay = this.backoff.next(Date.now());
          this.opts.log.warn({ resource: this.id, lastedMs: Date.now() - startedAt, retryInMs: Math.round(delay) }, 'watch ended at once with nothing on it; backing off');
          await this.sleep(delay);
          continue;
        }
        this.markUp('stream');
      } catch (err) {
        if (this.stopped) break;
        if (this.opts.optional && rv === undefined && err instanceof KubeApiError && err.code === 404) {
          await this.notServed();
          continue;
        }
        if (this.opts.optional && rv !== undefined && isStatus(err, 404)) {
          rv = undefined; // the CRD went away under the watch: the relist will say so
          continue;
        }
        if (err instanceof ExpiredError || (err instanceof KubeApiError && err.code === 410)) {
          this.opts.log.info({ resource: this.id, err: String(err) }, 'resourceVersion expired; relisting');
          rv = undefined;
          continue;
        }
        // Resume from the last event or bookmark this watch got, not from where it started: what it
        // carried is in the store, and a bookmark's version is the point of having asked for them.
        if (rv !== undefined && this.resourceVersion !== undefined) rv = this.resourceVersion;
        const delay = this.backoff.next(Date.now());
        this.markDown('stream', err);
        this.opts.log.warn({ resource: this.id, err: String(err), retryInMs: Math.round(delay) }, 'watch failed; reconnecting');
        // After an error the resourceVersion may be fine (a cut connection) or not; keep it and let
        // the server say 410 if it is too old, which costs one request instead of a full relist.
        await this.sleep(delay);
      }
    }
  }

  /**
   * Lists the resource page by page and diffs each page against the store as it arrives (mark), then
   * sweeps what no page carried as synthetic deletes: memory holds the store, one page and the keys
   * seen, never a second copy of the whole resource (docs/kernel.md "Memory").
   */
  private async relist(): Promise<string> {
    const relist = this.store.beginRelist();
    let cont: string | undefined;
    let rv: string;
    do {
      const page = listSchema.parse(
        await kubeRequest(this.opts.kc, collectionPath(this.opts.resource, this.opts.namespace), {
          query: { limit: this.opts.pageSize ?? 500, continue: cont, labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector },
          accept: this.metadataOnly ? METADATA_LIST_ACCEPT : undefined,
          signal: this.stopping.signal,
        }),
      );
      for (const item of page.items) for (const event of relist.add(this.lean(item))) this.pump.push(event);
      cont = page.metadata.continue || undefined;
      rv = page.metadata.resourceVersion ?? '';
    } while (cont);
    for (const event of relist.finish()) this.pump.push(event);
    this.relists++;
    this.opts.metrics?.relists.inc({ resource: this.id });
    this.resourceVersion = rv;
    // The first list is delivered before the watch counts as synced (waitForSync's promise); later
    // relists go on to watch while their events drain.
    if (!this.synced) await this.pump.drained();
    this.synced = true;
    this.markUp('stream');
    return rv;
  }

  /**
   * An optional resource the API server does not serve (404 on the list) has no objects: the store
   * empties (synthetic deletes if its CRD went away), the watch counts as synced and up, and the
   * list is tried again later so installing the CRD is picked up without a restart.
   */
  private async notServed(): Promise<void> {
    if (!this.synced || this.store.size > 0) this.opts.log.info({ resource: this.id }, 'resource not served (CRD not installed?); checking again later');
    for (const event of this.store.replace([])) this.pump.push(event);
    if (!this.synced) await this.pump.drained();
    this.synced = true;
    this.markUp('stream');
    await this.sleep(this.opts.absentRecheckMs ?? 30_000);
  }

  /**
   * Watches from `rv` until the stream ends; returns the last resourceVersion seen (an event's or a
   * bookmark's) and how many lines the stream carried. Ending the watch from this side (idle, an ERROR
   * event, stop) aborts its request wherever it is, before response headers too; those carry a timeout
   * of their own so a request that never gets an answer fails and frees its socket.
   */
  private watchFrom(rv: string): Promise<{ rv: string; lines: number }> {
    return new Promise((resolve, reject) => {
      let last = rv;
      let lines = 0;
      let failure: unknown;
      let ended = false;
      // Assigned once the request is opened; ending before that (stop) has nothing to abort.
      let stream: WatchStream | undefined = undefined;
      const timeout = this.opts.watchTimeoutSeconds?.() ?? 300 + Math.floor(Math.random() * 300);
      let idle: NodeJS.Timeout | undefined;
      const done = (err: unknown) => {
        if (ended) return;
        ended = true;
        clearTimeout(idle);
        if (this.endWatch === end) this.endWatch = undefined;
        stream?.abort();
        const cause = failure ?? err;
        if (cause && !this.stopped) reject(cause);
        else resolve({ rv: last, lines });
      };
      /** Ends the watch from this side (idle, ERROR event, stop), with `why` as its failure if any. */
      const end = (why?: unknown) => {
        failure ??= why;
        done(undefined);
      };
      this.endWatch = end;
      const armIdle = () => {
        clearTimeout(idle);
        // The server ends the watch after `timeout`; silence well past that (30 s, or as long again for
        // the short timeouts tests use) means a dead connection, or a request that never got an answer.
        const silence = timeout + Math.min(30, timeout);
        idle = setTimeout(() => end(new Error(`no data on the watch for ${silence}s`)), silence * 1000);
      };
      const onEvent = (type: string, raw: unknown) => {
        // Lines still buffered after the watch ended belong to a stream already given up on: the next
        // watch starts from `last`, so delivering them now could reorder events.
        if (ended) return;
        armIdle();
        lines++;
        // The type first: a BOOKMARK has no object (no name), only the resourceVersion to resume from,
        // which keeps a quiet or label-selected watch from resuming at a version long compacted away.
        const line = parseWatchLine(type, raw);
        switch (line.kind) {
          case 'error':
            end(line.code === 410 ? new ExpiredError(`watch: 410 Gone: ${line.message ?? 'expired'}`) : new Error(`watch error: ${JSON.stringify(line.raw)}`));
            return;
          case 'bookmark':
            this.streamCarries();
            last = line.resourceVersion;
            this.resourceVersion = last;
            this.bookmarks++;
            this.opts.metrics?.bookmarks.inc({ resource: this.id });
            return;
          case 'invalid':
            this.opts.log.warn({ resource: this.id, type, reason: line.reason }, 'watch sent a line this client cannot use; ignored');
            return;
          case 'object': {
            this.streamCarries();
            if (line.object.metadata.resourceVersion) last = line.object.metadata.resourceVersion;
            this.resourceVersion = last;
            const event = this.store.apply(line.type, this.lean(line.object));
            // Handed to the pump, never awaited here: the stream's reader must not block.
            if (event) this.pump.push(event);
          }
        }
      };
      armIdle();
      if (this.stopped) return end();
      stream = openWatch(this.opts.kc, {
        path: collectionPath(this.opts.resource, this.opts.namespace),
        query: { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: timeout, labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector },
        accept: this.metadataOnly ? METADATA_WATCH_ACCEPT : undefined,
        headerTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
        onLine: onEvent,
        onUnreadable: (reason) => this.opts.log.warn({ resource: this.id, reason }, 'watch sent a line this client cannot read; ignored'),
      });
      stream.done.then(
        () => done(undefined),
        (err: unknown) => done(isStatus(err, 410) ? new ExpiredError('watch: 410 Gone') : err),
      );
    });
  }

  /**
   * The object as stored and delivered: projected, with kind and apiVersion of the watched resource.
   * List items come without them, and metadata-only payloads say PartialObjectMetadata; mappers and
   * the dead-letter Event need the real ones.
   */
  private lean(obj: KubeObject): KubeObject {
    const out = project(obj, this.opts.projection);
    if (this.metadataOnly || out.kind === undefined) out.kind = this.kind;
    if (this.metadataOnly || out.apiVersion === undefined) out.apiVersion = this.apiVersion;
    return out;
  }

  /**
   * The watch is down while its stream (list/watch) or its delivery (enqueueing) is: each side reports
   * for itself, so the stream coming back never hides a delivery that is still failing, or the reverse.
   */
  private markUp(side: DownSide): void {
    this.downBecause.delete(side);
    const still = [...this.downBecause.values()];
    if (still.length > 0) {
      this.lastError = still[still.length - 1];
      return;
    }
    if (this.downSince !== undefined) this.opts.log.info({ resource: this.id }, 'watch recovered');
    this.downSince = undefined;
    this.lastError = undefined;
  }

  /**
   * A watch that carries a line after a failure is up: waiting for it to end cleanly (its 5–10 min timeout)
   * kept the watcher's readiness down all that time while it streamed. Cheap when already up (the hot path).
   */
  private streamCarries(): void {
    if (this.downBecause.has('stream')) this.markUp('stream');
  }

  private markDown(side: DownSide, err: unknown): void {
    this.downSince ??= Date.now();
    this.lastError = String(err);
    this.downBecause.set(side, this.lastError);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(t);
        this.wakers.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, ms);
      this.wakers.add(wake);
    });
  }
}
