/** zod schemas for the string values ConfigMaps hold. */
import { z } from 'zod';
import { parseGoDuration } from './duration.js';

const TRUE = new Set(['true', 'yes', '1']);
const FALSE = new Set(['false', 'no', '0']);

export const booleanText = z.string().transform((s, ctx) => {
  const v = s.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  ctx.addIssue({ code: 'custom', message: 'must be true or false' });
  return z.NEVER;
});

/** A Go duration, in milliseconds, at least `minMs`. */
export function durationText(minMs: number) {
  return z.string().transform((s, ctx) => {
    const ms = parseGoDuration(s.trim());
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: 'must be a duration such as "60s", "1m30s" or "500ms"' });
      return z.NEVER;
    }
    if (ms < minMs) {
      ctx.addIssue({ code: 'custom', message: minMs === 0 ? 'must not be negative' : `must be at least ${minMs / 1000}s` });
      return z.NEVER;
    }
    return ms;
  });
}

export const httpUrlText = z.string().transform((s, ctx) => {
  const t = s.trim();
  let url: URL;
  try {
    url = new URL(t);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a URL such as "https://prometheus:9090"' });
    return z.NEVER;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    ctx.addIssue({ code: 'custom', message: 'must be an http:// or https:// URL' });
    return z.NEVER;
  }
  return t.replace(/\/+$/, '');
});

export const plainText = z.string();
