/**
 * The resync tick's sweep of the role-status datastore: the hash of a ModelServing that no longer
 * exists goes (its outbox with it: transitions of a deleted object have nobody left to announce them
 * to). The handler already drops the hash when it reconciles a deleted ModelServing, but a delete
 * whose events were never delivered (no watcher leading, every watcher down) reaches no handler, and
 * the watcher's replay after a takeover only knows objects that still exist.
 */
import type { SweepContext } from '../../runtime/function.js';
import { runScript } from '../../queue/run-script.js';
import { scanKeys } from '../../queue/scan.js';
import { ROLE_STATUS_KEY_PART } from './role-store.js';

// Deletes the hash only if its seq is still the one read before the object was found gone. Every
// save bumps seq (role-store.ts), so a hash written for a namesake created after that read survives.
const DELETE_IF_UNCHANGED = `
if (redis.call('HGET', KEYS[1], 'seq') or '') ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
`;

export async function sweepRoleStatus(ctx: SweepContext): Promise<number> {
  const base = `${ctx.prefix}:${ROLE_STATUS_KEY_PART}:`;
  // Every primary of a cluster: one entry per ModelServing, spread over slots.
  const keys = await scanKeys(ctx.redis, `${base}*`);
  let removed = 0;
  for (const redisKey of keys) {
    const objectKey = redisKey.slice(base.length);
    // Version first, liveness second, delete-if-unchanged last: see SweepContext.gone for why.
    const seq = await ctx.redis.hget(redisKey, 'seq');
    if (!(await ctx.gone(objectKey))) continue;
    if ((await runScript(ctx.redis, DELETE_IF_UNCHANGED, [redisKey], [seq ?? ''])) === 1) {
      removed++;
      ctx.log.info({ modelServing: objectKey }, 'dropped the role datastore entry of a ModelServing that no longer exists');
    }
  }
  return removed;
}
