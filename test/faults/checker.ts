import { z } from 'zod';

/**
 * One reconcile as a fault-worker recorded it. `end` is taken just before the fenced commit is sent, so
 * an accepted commit happened after `end`: two accepted reconciles whose [start, end] intersect held one
 * key at once even by the most lenient reading.
 */
export const reconcileRecordSchema = z.object({
  key: z.string().min(1),
  /** The fencing token the queue gave this reconcile ('' when the queue gave none). */
  token: z.string(),
  pid: z.number().int(),
  start: z.number(),
  end: z.number(),
  /** The object's version in the world when the reconcile read it, at start. */
  version: z.number().int().nonnegative(),
  outcome: z.enum(['accepted', 'fenced-out', 'failed']),
  /** Whether the reconcile's AbortSignal had fired (lease lost, deadline) when it committed. */
  aborted: z.boolean().optional(),
  /** The resourceVersion of the key's ConfigMap as the reconcile read it at its start (api effects). */
  readRv: z.string().optional(),
  /** The version its job was woken at (ReconcileInfo.minResourceVersion), when the storm passed one. */
  woken: z.string().optional(),
  /** What its effects came to, as the worker saw them (the server's record is the truth, see checkEffects). */
  effects: z.array(z.object({ kind: z.enum(['api', 'state']), outcome: z.enum(['landed', 'refused', 'unknown']), detail: z.string().optional() })).optional(),
});
export type ReconcileRecord = z.infer<typeof reconcileRecordSchema>;

export interface Violation {
  kind: 'overlap' | 'token-order' | 'lost' | 'woken' | 'stale-effect';
  key: string;
  detail: string;
}

export interface HistoryReport {
  reconciles: number;
  accepted: number;
  fencedOut: number;
  failed: number;
  overlaps: number;
  tokenOrder: number;
  lost: number;
  /** Changed keys none of whose accepted reconciles was woken at the final version (0 unless asked). */
  woken: number;
  violations: Violation[];
}

/** Parses the JSON lines one worker appended (a torn last line of a killed worker is skipped). */
export function parseHistory(text: string): ReconcileRecord[] {
  const out: ReconcileRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      continue;
    }
    out.push(reconcileRecordSchema.parse(json));
  }
  return out;
}

/**
 * Judges a history against the world's final versions (key → version; keys never changed may be absent):
 * - overlap: two accepted reconciles of one key whose [start, end] intersect;
 * - token-order: accepted reconciles of a key, by start, whose tokens do not increase;
 * - lost: a changed key whose last accepted reconcile (by start) did not read its final version;
 * - woken (with `opts.woken`, when every event carried its version): a changed key none of whose accepted
 *   reconciles was woken at its final version (ReconcileInfo.minResourceVersion): the claim after the last
 *   event must hand its version over, and a run that ends any other way than accepted (failed, fenced out,
 *   its holder gone) must give it back to the key for the next. (Not "the last run": a run may be woken
 *   with no new event — a dirty mark, a resync — after the one that took it.)
 */
export function checkHistory(records: ReconcileRecord[], finalVersions: ReadonlyMap<string, number>, opts: { woken?: boolean } = {}): HistoryReport {
  const violations: Violation[] = [];
  const byKey = new Map<string, ReconcileRecord[]>();
  for (const r of records) {
    if (r.outcome !== 'accepted') continue;
    const list = byKey.get(r.key) ?? [];
    list.push(r);
    byKey.set(r.key, list);
  }
  let overlaps = 0;
  let tokenOrder = 0;
  for (const [key, list] of byKey) {
    list.sort((a, b) => a.start - b.start || a.end - b.end);
    // Sorted by start, an interval overlaps an earlier one iff it starts before the latest end so far.
    let latest: ReconcileRecord | undefined;
    for (const r of list) {
      if (latest && r.start <= latest.end) {
        overlaps++;
        violations.push({ kind: 'overlap', key, detail: `${describe(latest)} and ${describe(r)} overlap` });
      }
      if (!latest || r.end > latest.end) latest = r;
    }
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1]!;
      const cur = list[i]!;
      if (!tokenBefore(prev.token, cur.token)) {
        tokenOrder++;
        violations.push({ kind: 'token-order', key, detail: `token ${cur.token} of ${describe(cur)} does not follow ${prev.token} of ${describe(prev)}` });
      }
    }
  }
  let lost = 0;
  let woken = 0;
  for (const [key, version] of finalVersions) {
    if (version === 0) continue;
    const list = byKey.get(key);
    const last = list?.[list.length - 1];
    if (!last || last.version !== version) {
      lost++;
      violations.push({ kind: 'lost', key, detail: last ? `last accepted reconcile ${describe(last)} read version ${last.version}, final is ${version}` : `no accepted reconcile; final version ${version}` });
    } else if (opts.woken && !list!.some((r) => r.woken === String(version))) {
      woken++;
      const seen = [...new Set(list!.map((r) => r.woken ?? '-'))].join(',');
      violations.push({ kind: 'woken', key, detail: `no accepted reconcile was woken at the final version ${version} (woken at: ${seen})` });
    }
  }
  return {
    reconciles: records.length,
    accepted: records.filter((r) => r.outcome === 'accepted').length,
    fencedOut: records.filter((r) => r.outcome === 'fenced-out').length,
    failed: records.filter((r) => r.outcome === 'failed').length,
    overlaps,
    tokenOrder,
    lost,
    woken,
    violations,
  };
}

/** Tokens are decimal integers; a missing token ('') orders nothing, so it never passes. */
function tokenBefore(a: string, b: string): boolean {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

function describe(r: ReconcileRecord): string {
  return `[pid ${r.pid} token ${r.token || '-'} ${r.start}..${r.end} v${r.version}]`;
}

/**
 * A reconcile's read or an effect that landed, each stamped with the server's order:
 * - `api`: the ConfigMap's resourceVersion (the one a reconcile read; the one a write produced). A test-only
 *   assumption: in the sandbox resourceVersions are etcd revisions, so they compare as integers. Clients must
 *   never compare them (kube/resource-version.ts); the checker may, because it knows its server.
 * - `state`: the place of its entry in the case's order list on the queue's Redis (RPUSH, in the same MULTI or
 *   script as the state write it stamps, or as the reconcile's first step): the order Redis ran them in, which
 *   no clock reading can tie or invert.
 */
export interface Stamp {
  kind: 'api' | 'state';
  key: string;
  token: string;
  order: string;
}

export interface EffectsReport {
  /** Effects the servers hold (every write the watch saw, every state write in the order list). */
  effects: number;
  /** Effects the workers saw refused: a 409, fenced out in Redis, or LeaseLostError before sending. */
  refused: number;
  /** Effects whose fate the worker never learnt (cut off, aborted in flight); the servers' record decides. */
  unknown: number;
  /** Effects of a token that landed after a reconcile of a newer token of the key read: each a violation. */
  staleLanded: number;
  violations: Violation[];
}

/**
 * Judges effects by the servers' order. An effect of token T is stale when a reconcile of the same key with
 * a newer token T' > T read before it landed (its read's order is lower than the effect's): the new holder
 * planned from a world the old one then changed. Issue 28's bar: a stale write either lands before the new
 * holder reads, or it is refused.
 */
export function checkEffects(reads: readonly Stamp[], landed: readonly Stamp[], records: readonly ReconcileRecord[] = []): EffectsReport {
  const violations: Violation[] = [];
  // Per key and kind, reads sorted by token descending, with the lowest read order among tokens ≥ each.
  const index = new Map<string, Array<{ token: bigint; minOrder: string; by: Stamp }>>();
  const groups = new Map<string, Stamp[]>();
  for (const r of reads) {
    if (!/^\d+$/.test(r.token)) continue;
    const g = `${r.kind}\u0000${r.key}`;
    const list = groups.get(g) ?? [];
    list.push(r);
    groups.set(g, list);
  }
  for (const [g, list] of groups) {
    list.sort((a, b) => (BigInt(b.token) > BigInt(a.token) ? 1 : BigInt(b.token) < BigInt(a.token) ? -1 : 0));
    const out: Array<{ token: bigint; minOrder: string; by: Stamp }> = [];
    let min: Stamp | undefined;
    for (const r of list) {
      if (!min || compareOrder(r.kind, r.order, min.order) < 0) min = r;
      out.push({ token: BigInt(r.token), minOrder: min.order, by: min });
    }
    index.set(g, out);
  }
  let staleLanded = 0;
  for (const e of landed) {
    const list = index.get(`${e.kind}\u0000${e.key}`);
    if (!list || !/^\d+$/.test(e.token)) continue;
    const token = BigInt(e.token);
    // The entry of the smallest token still > e.token carries the lowest order among all newer tokens' reads.
    let newer: { minOrder: string; by: Stamp } | undefined;
    for (const r of list) {
      if (r.token > token) newer = r;
      else break;
    }
    if (newer && compareOrder(e.kind, newer.minOrder, e.order) < 0) {
      staleLanded++;
      violations.push({
        kind: 'stale-effect',
        key: e.key,
        detail: `${e.kind} effect of token ${e.token} landed at ${e.order}, after token ${newer.by.token} read at ${newer.minOrder}`,
      });
    }
  }
  let refused = 0;
  let unknown = 0;
  for (const r of records) {
    for (const e of r.effects ?? []) {
      if (e.outcome === 'refused') refused++;
      else if (e.outcome === 'unknown') unknown++;
    }
  }
  return { effects: landed.length, refused, unknown, staleLanded, violations };
}

/** Orders two stamps of one kind: resourceVersions and list places alike, as decimal integers. */
export function compareOrder(kind: Stamp['kind'], a: string, b: string): number {
  const n = (s: string): bigint => {
    if (!/^\d+$/.test(s)) throw new Error(`not a ${kind} order stamp: ${s}`);
    return BigInt(s);
  };
  const [x, y] = [n(a), n(b)];
  return x < y ? -1 : x > y ? 1 : 0;
}
