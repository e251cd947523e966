/** One ModelServing's entry in the role datastore. */
export interface RoleStatusEntry {
  /** The object key (`namespace/name`) the entry belongs to. */
  key: string;
  redisKey: string;
  /** Redis type of the stored value (the ModelServing datastore keeps a hash per object). */
  type: string;
  /** The stored value, decoded by the function that owns it. */
  value: unknown;
}

/**
 * Read-only access to the role datastore for the ops server. The ModelServing function owns the
 * format and gives the implementation (functions/reconcile-modelserving/role-status-reader.ts); the
 * ops server only shows what it returns.
 */
export interface RoleStatusReader {
  /**
   * One page: at most `limit` entries, read from where `continue` (the previous page's token) stopped,
   * with a bounded number of Redis calls per page. `continue` is absent on the last page.
   */
  list(opts?: { namespace?: string; limit?: number; continue?: string }): Promise<{ entries: RoleStatusEntry[]; continue?: string }>;
  get(namespace: string, name: string): Promise<RoleStatusEntry[]>;
}
