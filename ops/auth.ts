import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

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

export interface TokenGuardOptions {
  /** The configured token; undefined disables the guarded routes (never opens them). */
  token: string | undefined;
  /** Ask browsers for Basic credentials on 401 (the writable dashboard). */
  basicRealm?: string;
}

/**
 * Guards state-changing routes. No token configured → 403 for everyone, with a message saying how to
 * enable them; a missing or wrong token → 401. The token never reaches a log line: it is neither
 * logged here nor echoed in any answer.
 */
export function requireToken(opts: TokenGuardOptions): MiddlewareHandler {
  return async (c, next) => {
    if (!opts.token) {
      return c.json(
        { error: 'state-changing ops routes are disabled: set RIPPLE_OPS_TOKEN (at least 16 characters) on the ops server to enable them' },
        403,
      );
    }
    const presented = presentedSecret(c.req.header('authorization'));
    if (presented === undefined || !secretMatches(presented, opts.token)) {
      const challenge = opts.basicRealm ? `Basic realm="${opts.basicRealm}", charset="UTF-8"` : 'Bearer realm="ripple-ops"';
      c.header('WWW-Authenticate', challenge);
      return c.json({ error: presented === undefined ? 'authentication required: send Authorization: Bearer <RIPPLE_OPS_TOKEN>' : 'invalid token' }, 401);
    }
    await next();
  };
}
