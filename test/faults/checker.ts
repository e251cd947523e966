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
});
export type ReconcileRecord = z.infer<typeof reconcileRecordSchema>;

export interface Violation {
  kind: 'overlap' | 'token-order' | 'lost';
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
 * - lost: a changed key whose last accepted reconcile (by start) did not read its final version.
 */
export function checkHistory(records: ReconcileRecord[], finalVersions: ReadonlyMap<string, number>): HistoryReport {
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
  for (const [key, version] of finalVersions) {
    if (version === 0) continue;
    const list = byKey.get(key);
    const last = list?.[list.length - 1];
    if (!last || last.version !== version) {
      lost++;
      violations.push({ kind: 'lost', key, detail: last ? `last accepted reconcile ${describe(last)} read version ${last.version}, final is ${version}` : `no accepted reconcile; final version ${version}` });
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
