/**
 * The resync tick's sweep of the autoscaler's per-VA state: the decision, the gauge series and the
 * inactive reason of a VariantAutoscaling that no longer exists. The optimization cycle forgets them too, but only when it
 * runs to the end (a failing Prometheus or API list stops it first), and VA deletes reach no handler
 * (seed 003 blocks them); this sweep needs nothing but the list of VAs, so it cleans up on every tick.
 */
import type { SweepContext } from '../../runtime/function.js';
import { runScript } from '../../queue/run-script.js';
import { isAnnotatedKey, isSpecialKey, stateKeys } from './keys.js';

/**
 * The hashes keyed by VA (`namespace/name`) whose entries belong to that VA alone: its decision, its
 * gauge series, and why a cycle left it out. (`cycle-requested` markers carry a TTL: they go by themselves.)
 */
function perVariantHashes(prefix: string): string[] {
  const keys = stateKeys(prefix);
  return [keys.decisions, keys.series, keys.inactive];
}

// KEYS: the per-VA hashes. ARGV: the VA key, then each hash's value read before the VA was found gone
// ('' = absent). Every cycle writes a decision with its own `decidedAt`, so one written for a VA
// created after that read differs and the VA's entries all survive.
const DELETE_IF_UNCHANGED = `
for i = 1, #KEYS do
  if (redis.call('HGET', KEYS[i], ARGV[1]) or '') ~= ARGV[i + 1] then return 0 end
end
local n = 0
for i = 1, #KEYS do n = n + redis.call('HDEL', KEYS[i], ARGV[1]) end
return n
`;

export async function sweepVariantState(ctx: SweepContext): Promise<number> {
  const hashes = perVariantHashes(ctx.prefix);
  const fields = await Promise.all(hashes.map((h) => ctx.redis.hkeys(h)));
  let removed = 0;
  for (const vaKey of new Set(fields.flat())) {
    // An annotated HPA's or ScaledObject's variant is no VA: the cycle that no longer finds it forgets it.
    if (isSpecialKey(vaKey) || isAnnotatedKey(vaKey)) continue;
    // Values first, liveness second, delete-if-unchanged last: see SweepContext.gone for why.
    const values = await Promise.all(hashes.map((h) => ctx.redis.hget(h, vaKey)));
    if (!(await ctx.gone(vaKey))) continue;
    const n = Number(await runScript(ctx.redis, DELETE_IF_UNCHANGED, hashes, [vaKey, ...values.map((v) => v ?? '')]));
    if (n > 0) {
      removed++;
      ctx.log.info({ variantAutoscaling: vaKey }, 'dropped the decision, series and inactive reason of a VariantAutoscaling that no longer exists');
    }
  }
  return removed;
}
