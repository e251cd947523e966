import { createHash, timingSafeEqual } from 'node:crypto';

/*
 * Shared-secret checks for every HTTP surface that takes a token (the ops server's control routes,
 * `ripple serve`). Kept apart from both so neither transport depends on the other.
 */

/**
 * Compares a presented secret with the configured one in constant time. Both sides are hashed first
 * so the comparison runs over equal-length digests: neither the content nor the length of the
 * configured token leaks through timing.
 */
export function secretMatches(presented: string, configured: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(configured, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/**
 * The secret an Authorization header carries: `Bearer <token>`, or `Basic base64(user:token)` so a
 * browser can open the writable dashboard (it prompts for a password; the user name is ignored).
 */
export function presentedSecret(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const space = authorization.indexOf(' ');
  if (space < 0) return undefined;
  const scheme = authorization.slice(0, space).toLowerCase();
  const value = authorization.slice(space + 1).trim();
  if (scheme === 'bearer') return value || undefined;
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon < 0 ? undefined : decoded.slice(colon + 1) || undefined;
  }
  return undefined;
}
