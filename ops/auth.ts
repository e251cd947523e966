import type { MiddlewareHandler } from 'hono';
import { presentedSecret, secretMatches } from '../runtime/secrets.js';

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
