/** Left-aligned columns, two spaces apart, headers in capitals: what `kubectl get` prints. */
export function table(headers: string[], rows: Array<Array<string | number | boolean | null | undefined>>): string {
  const cells = [headers.map((h) => h.toUpperCase()), ...rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}
