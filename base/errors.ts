/**
 * Typed reconcile errors. The queue decides what to do by class, not by message:
 * a TerminalError (the spec can never work as written) is reported on status and not retried;
 * anything else is transient and retried with per-key exponential backoff.
 */
export class TerminalError extends Error {
  override readonly name = 'TerminalError';
  constructor(
    message: string,
    /** CamelCase reason for the status condition, e.g. `InvalidSpec`. */
    readonly reason = 'InvalidSpec',
  ) {
    super(message);
  }
}

/** A dependency could not be reached (API server, Prometheus, Redis). Retried; may degrade status after a grace period. */
export class ConnectivityError extends Error {
  override readonly name = 'ConnectivityError';
}

/**
 * By class, or by name and reason: a function module that resolved a copy of Ripple of its own (its own
 * node_modules/ripple beside the image's) throws that copy's TerminalError, which is not this class.
 */
export function isTerminal(err: unknown): err is TerminalError {
  return err instanceof TerminalError || (err instanceof Error && err.name === 'TerminalError' && typeof (err as { reason?: unknown }).reason === 'string');
}
