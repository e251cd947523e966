import { pino, type Logger } from 'pino';
import PinoPretty from 'pino-pretty';

export type { Logger };

export type LogFormat = 'pretty' | 'json';

/**
 * Readable lines for a person at a terminal, JSON for everything else (a Pod's log, a pipe, a file, a
 * test runner), where a collector parses each line. `RIPPLE_LOG_FORMAT` overrides the guess either way.
 */
export function chooseLogFormat(stdoutIsTTY: boolean | undefined, override: string | undefined): LogFormat {
  if (override === 'json' || override === 'pretty') return override;
  return stdoutIsTTY === true ? 'pretty' : 'json';
}

const REDACT = {
  paths: ['token', '*.token', 'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', 'password', '*.password'],
  censor: '[redacted]',
};

/**
 * The process logger. Every reconcile gets a child with `function`, `key` and `reconcileId`.
 * Authorization headers and tokens are redacted wherever they appear in logged objects (before
 * pretty-printing too: redaction happens in pino, the prettifier only formats).
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  const format = chooseLogFormat(process.stdout.isTTY, process.env.RIPPLE_LOG_FORMAT);
  if (format === 'json') return pino({ name, level, redact: REDACT });
  // In-process (sync) rather than a transport worker thread: lines appear in order with the rest of
  // the terminal output and nothing is lost when the process exits right after logging.
  const pretty = PinoPretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  return pino({ name, level, redact: REDACT }, pretty);
}
