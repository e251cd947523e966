/** When certificates are renewed: what is left of their life, and how often that is looked at. */
export interface RotationPolicy {
  /** Validity of a new CA, in days. */
  caDays: number;
  /** Validity of a new serving certificate, in days. */
  servingDays: number;
  /** Renew a certificate once less than this fraction of its validity is left (kubelet-style, e.g. 0.3). */
  renewWhenLeft: number;
}

export const DEFAULT_ROTATION: RotationPolicy = { caDays: 365, servingDays: 30, renewWhenLeft: 0.3 };

/**
 * Is it time to renew a certificate valid for `days` that expires at `notAfter`? Renewal starts well before the
 * end, so an API server never dials a certificate that has expired, even if one check is missed.
 */
export function needsRenewal(notAfter: Date, days: number, renewWhenLeft: number, now: Date): boolean {
  const leftMs = notAfter.getTime() - now.getTime();
  return leftMs < days * 86_400_000 * renewWhenLeft;
}
