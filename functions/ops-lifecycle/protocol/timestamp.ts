import { z } from 'zod';

/**
 * Time in this package is a bigint of Unix nanoseconds: that is what every lifecycle label holds
 * (`strconv.FormatInt(time.Now().UnixNano(), 10)` upstream), and a Date would lose the last six digits.
 */
export type UnixNanos = bigint;

export const NANOS_PER_MILLI = 1_000_000n;
export const NANOS_PER_SECOND = 1_000_000_000n;

/** Label values written by other tools are untrusted: only plain decimal int64 counts as a timestamp. */
export const TimestampValueSchema = z
  .string()
  .regex(/^\d{1,19}$/, 'not a decimal Unix-nanosecond timestamp')
  .transform((s) => BigInt(s))
  .refine((n) => n <= 9_223_372_036_854_775_807n, 'overflows int64');

export function formatTimestamp(now: UnixNanos): string {
  return now.toString(10);
}

/** undefined when the value is not a timestamp (kuperator's own tests write "true" into operate). */
export function parseTimestamp(value: string | undefined): UnixNanos | undefined {
  if (value === undefined) return undefined;
  const parsed = TimestampValueSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

export function nanosFromDate(date: Date): UnixNanos {
  return BigInt(date.getTime()) * NANOS_PER_MILLI;
}

/** RFC 3339 at second precision, the form metav1.Time serialises to. */
export function rfc3339(now: UnixNanos): string {
  return new Date(Number(now / NANOS_PER_MILLI)).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
