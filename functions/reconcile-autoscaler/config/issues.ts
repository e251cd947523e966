/**
 * A problem found in a ConfigMap entry. The handler logs it and emits an Event naming the key;
 * parsing never throws, so one bad entry cannot stop autoscaling.
 */
export interface ConfigIssue {
  configMap: string;
  key: string;
  severity: 'error' | 'warning';
  message: string;
  /** What was used instead of the bad entry. */
  fallback: 'last-good' | 'default' | 'skipped' | 'none';
}

const FALLBACK_TEXT: Record<ConfigIssue['fallback'], string> = {
  'last-good': 'keeping the last good value',
  default: 'using the default',
  skipped: 'entry skipped',
  none: '',
};

/** One line for logs and Event messages, e.g. `saturation-scaling-config[default]: … (keeping the last good value)`. */
export function describeIssue(issue: ConfigIssue): string {
  const tail = FALLBACK_TEXT[issue.fallback];
  return `${issue.configMap}[${issue.key}]: ${issue.message}${tail ? ` (${tail})` : ''}`;
}
