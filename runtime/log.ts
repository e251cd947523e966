import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The process logger. Every reconcile gets a child with `function`, `key` and `reconcileId`.
 * Authorization headers and tokens are redacted wherever they appear in logged objects.
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', 'password', '*.password'],
      censor: '[redacted]',
    },
  });
}
