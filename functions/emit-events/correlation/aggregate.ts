import type { AggregateRecord } from './state.js';

export const COMBINED_MESSAGE_PREFIX = '(combined from similar events): ';

export interface AggregateOutcome {
  record: AggregateRecord;
  /** The group reached the threshold: record the combined event instead of this one. */
  aggregated: boolean;
}

/**
 * client-go's EventAggregator for one group: remember the distinct messages seen, start afresh
 * after a gap longer than the interval, and aggregate from the `maxEvents`-th distinct message on.
 *
 * After aggregating, client-go drops an arbitrary member of the set (`PopAny`) so it never grows
 * past `maxEvents - 1`. We drop the message just added, which is one of the outcomes client-go can
 * produce and makes the rule deterministic: the group keeps its first nine distinct messages (each
 * still counted on its own Event), and every other message goes to the combined Event until the
 * group goes quiet for the interval.
 */
export function aggregateStep(
  previous: AggregateRecord | null,
  messageDigest: string,
  nowMs: number,
  options: { aggregateMaxEvents: number; aggregateIntervalMs: number },
): AggregateOutcome {
  const fresh = previous === null || nowMs - previous.lastTimestampMs > options.aggregateIntervalMs;
  const messages = fresh ? [] : [...previous.messages];
  if (!messages.includes(messageDigest)) messages.push(messageDigest);
  if (messages.length < options.aggregateMaxEvents) {
    return { record: { messages, lastTimestampMs: nowMs }, aggregated: false };
  }
  messages.pop();
  return { record: { messages, lastTimestampMs: nowMs }, aggregated: true };
}

export function combinedMessage(message: string): string {
  return COMBINED_MESSAGE_PREFIX + message;
}
