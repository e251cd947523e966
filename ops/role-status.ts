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
  list(opts?: { namespace?: string; limit?: number }): Promise<{ entries: RoleStatusEntry[]; truncated: boolean }>;
  get(namespace: string, name: string): Promise<RoleStatusEntry[]>;
}
