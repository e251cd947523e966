import type { ObservationRecord } from './state.js';

export interface ObserveOutcome {
  record: ObservationRecord;
  /** First occurrence (or the previous record was stale): create the Event; otherwise patch its count. */
  isNew: boolean;
}

/**
 * client-go's eventObserve: a known event keeps its name and firstTimestamp and has its count
 * raised by one; an unknown one starts at count 1 under a new name. A record older than the
 * observation TTL is treated as unknown (its Event has most likely been deleted by the API server).
 */
export function observeStep(
  previous: ObservationRecord | null,
  nowMs: number,
  observationTtlMs: number,
  nameFor: (firstTimestampMs: number) => string,
): ObserveOutcome {
  if (previous !== null && nowMs - previous.lastTimestampMs <= observationTtlMs) {
    return {
      record: {
        name: previous.name,
        count: previous.count + 1,
        firstTimestampMs: previous.firstTimestampMs,
        lastTimestampMs: Math.max(nowMs, previous.lastTimestampMs),
      },
      isNew: false,
    };
  }
  return { record: { name: nameFor(nowMs), count: 1, firstTimestampMs: nowMs, lastTimestampMs: nowMs }, isNew: true };
}
