import { sha256Hex } from './keys.js';

const DNS_SUBDOMAIN_MAX = 253;
const SUFFIX_HEX = 16;

/**
 * A deterministic Event name. client-go names an Event `<involvedObject.name>.<hex of UnixNano>`;
 * a clock is no good across replicas, so the suffix is 16 hex digits of a hash of the correlation
 * key and the series' first timestamp (same shape, same length as client-go's). Any replica, or a
 * redelivered job, deciding to create the same series picks the same name, so a second create gets
 * 409 AlreadyExists, which is success. The first timestamp is in the hash so that a series started
 * after its record expired gets a fresh object instead of colliding with the old Event while the
 * API server still keeps it (--event-ttl), and the key is in it so that two series starting in the
 * same millisecond on one object never share a name (client-go had nanoseconds for that).
 *
 * Names that are not DNS subdomains are folded into one (client-go falls back to a random UUID,
 * which would not be deterministic).
 */
export function eventName(involvedName: string, correlationKey: string, firstTimestampMs: number): string {
  const suffix = sha256Hex(JSON.stringify([correlationKey, firstTimestampMs])).slice(0, SUFFIX_HEX);
  const prefix = toDnsSubdomain(involvedName, DNS_SUBDOMAIN_MAX - SUFFIX_HEX - 1);
  return prefix === '' ? suffix : `${prefix}.${suffix}`;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isDnsSubdomain(name: string): boolean {
  return name.length > 0 && name.length <= DNS_SUBDOMAIN_MAX && DNS_SUBDOMAIN.test(name);
}

function toDnsSubdomain(name: string, maxLength: number): string {
  if (name.length <= maxLength && DNS_SUBDOMAIN.test(name)) return name;
  const labels = name
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .split('.')
    .map((label) => label.replace(/^-+|-+$/g, ''))
    .filter((label) => label.length > 0);
  let out = labels.join('.').slice(0, maxLength);
  out = out.replace(/[-.]+$/, '');
  return out;
}
