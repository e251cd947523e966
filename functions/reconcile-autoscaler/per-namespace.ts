/**
 * One list per namespace, each on its own: a namespace whose list fails (RBAC withdrawn, a timeout)
 * is reported and left out, and the others go on — one failing namespace must not abort the cycle for
 * every model (issue 14 scenario 9).
 */
export async function listPerNamespace<T>(
  namespaces: readonly string[],
  list: (namespace: string) => Promise<readonly T[]>,
): Promise<{ items: Map<string, readonly T[]>; failed: Map<string, string> }> {
  const items = new Map<string, readonly T[]>();
  const failed = new Map<string, string>();
  for (const ns of namespaces) {
    try {
      items.set(ns, await list(ns));
    } catch (err) {
      failed.set(ns, err instanceof Error ? err.message : String(err));
    }
  }
  return { items, failed };
}
