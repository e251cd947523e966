/**
 * Credentials a URL may carry (`scheme://user:password@host`) must never reach a log line, an error
 * message, an object's status, an Event or a record in Redis: status and Events are readable by anyone
 * who may read the object, and the dashboard is unauthenticated. Everything that can put a configured
 * URL into such a place passes its text through here.
 */

// Up to the last `@` of an authority: a password may itself hold an unencoded `@` (WHATWG URL parsing
// takes the last one as the separator), and a `/`, `?`, `#` or whitespace ends the authority.
const USERINFO = /\/\/[^/\s?#@]*(?:@[^/\s?#@]*)*@/g;

/** The text with the user-information part of every URL in it replaced by `[redacted]`. */
export function redactUrl(text: string): string {
  return text.replace(USERINFO, '//[redacted]@');
}

/** A URL without its user-information part, for a record that must still name the server. */
export function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username === '' && parsed.password === '') return url;
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, url.endsWith('/') ? '/' : '');
  } catch {
    return redactUrl(url);
  }
}
