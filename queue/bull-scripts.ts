import { createRequire } from 'node:module';
import path from 'node:path';
import { Job, type Queue } from 'bullmq';
import { z } from 'zod';

/**
 * BullMQ's own Lua, composed into Ripple's scripts so one EVALSHA both decides (Ripple's per-key state)
 * and acts (adds the job): an enqueue is one round trip instead of two, and there is no moment between
 * Ripple recording a job id and BullMQ creating the job.
 *
 * The text is BullMQ's, loaded from the installed package at run time (bullmq is pinned, see
 * package.json; its scripts ship with their includes inlined), never copied into Ripple. Each script
 * becomes a Lua function of (KEYS, ARGV), so its own KEYS/ARGV indexing stays as BullMQ wrote it.
 * BullMQ names a job's hash from the prefix in its arguments, as it does for its own scripts; every key,
 * BullMQ's and Ripple's, sits under the function's hash tag (queue/keys.ts), so this runs on a cluster.
 */

const scriptModule = z.record(z.string(), z.object({ name: z.string(), content: z.string(), keys: z.number() }));
const require = createRequire(import.meta.url);

function bullScript(file: string): string {
  // Resolved beside bullmq's own entry point, so it is the copy BullMQ itself runs.
  const mod = scriptModule.parse(require(path.join(path.dirname(require.resolve('bullmq')), 'scripts', file)));
  const script = Object.values(mod)[0];
  if (!script) throw new Error(`bullmq script ${file} not found`);
  return script.content;
}

function asFunction(name: string, content: string): string {
  return `local function ${name}(KEYS, ARGV)\n${content}\nend\n`;
}

/** BullMQ's keys the composed add needs, in addStandardJob's order (KEYS[11] … KEYS[19] of ENQUEUE and RELEASE). */
export function bullAddKeys(queue: Queue): string[] {
  const k = queue.keys;
  return [k.wait!, k.paused!, k.meta!, k.id!, k.completed!, k.delayed!, k.active!, k.events!, k.marker!];
}

/** Lua: bullAdd's keys where ENQUEUE and RELEASE take them, bullAddKeys() after Ripple's ten. */
export const ADD_KEYS_LUA = '{KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17], KEYS[18], KEYS[19]}';

/**
 * Lua: `bullAdd(ak, id, delayMs, now, packedArgs, data, packedOpts)` adds the job `id` as BullMQ's Queue.add would
 * (standard, or delayed when delayMs > 0). `ak` is bullAddKeys()'s nine keys, as a table: ADD_KEYS_LUA (KEYS[11] …
 * KEYS[19], after Ripple's ten of queue/keys.ts scriptKeys) for ENQUEUE and RELEASE, or the ones RELEASE_AND_FINISH
 * finds among moveToFinished's keys. packedArgs and packedOpts are what bullAddArgs() built for a job without id
 * and delay; both are set here, once the script has decided them. Adding an id that exists does nothing (BullMQ's
 * rule), as with Queue.add.
 */
export const BULL_ADD_LUA = `
${asFunction('bullAddStandard', bullScript('addStandardJob-9.js'))}
${asFunction('bullAddDelayed', bullScript('addDelayedJob-6.js'))}
local function bullAdd(ak, id, delayMs, now, packedArgs, data, packedOpts)
  local a = cmsgpack.unpack(packedArgs)
  a[2] = id
  -- The job's timestamp is Redis's clock now, as the script's due is: a delayed job is due at timestamp +
  -- delay, and the caller's clock when it built the arguments can be a round trip or more behind.
  a[4] = now
  local o = cmsgpack.unpack(packedOpts)
  o['jobId'] = id
  if delayMs > 0 then
    o['delay'] = delayMs
    return bullAddDelayed({ak[9], ak[3], ak[4], ak[6], ak[5], ak[8]}, {cmsgpack.pack(a), data, cmsgpack.pack(o)})
  end
  return bullAddStandard(ak, {cmsgpack.pack(a), data, cmsgpack.pack(o)})
end
`;

/**
 * Lua: `bullFinish(KEYS, ARGV)` is BullMQ's moveToFinished (a job to completed or failed, fetching the
 * next one), called with the keys and arguments BullMQ's RedisQueueBackend.moveToCompletedArgs built.
 */
export const BULL_FINISH_LUA = asFunction('bullFinish', bullScript('moveToFinished-14.js'));

/**
 * Lua: `bullMoveToActive(KEYS, ARGV)` is BullMQ's moveToActive (the next waiting job to active, under the
 * worker's lock), called with the keys and arguments BullMQ's RedisQueueBackend.moveToActive built.
 */
export const BULL_MOVE_TO_ACTIVE_LUA = asFunction('bullMoveToActive', bullScript('moveToActive-11.js'));

/** How many keys BullMQ's moveToActive and moveToFinished take (RedisQueueBackend's key lists). */
export const BULL_MOVE_TO_ACTIVE_KEYS = 11;
export const BULL_FINISH_KEYS = 14;

/**
 * Where bullAddKeys()'s nine keys sit among moveToFinished's fourteen (0-based; -1: not there), for a job
 * completed (BullMQ's RedisQueueBackend.moveToCompletedArgs order: wait, active, prioritized, events, stalled, limiter,
 * delayed, paused, meta, pc, completed, the job, metrics, marker). RELEASE_AND_FINISH sends each key once:
 * moveToFinished's, then the one the add alone needs (the id counter). Lua's indexes in RELEASE_AND_FINISH
 * follow this list; finishAddKeys() checks it against the keys BullMQ built.
 */
export const ADD_KEYS_IN_FINISH = [0, 7, 8, -1, 10, 6, 1, 3, 13] as const;

/** Lua: bullAdd's keys in RELEASE_AND_FINISH: moveToFinished's at KEYS[11] … KEYS[24], then the ones only the add needs. */
export const FINISH_ADD_KEYS_LUA = ((): string => {
  let extra = 0;
  return `{${ADD_KEYS_IN_FINISH.map((at) => `KEYS[${11 + (at < 0 ? BULL_FINISH_KEYS + extra++ : at)}]`).join(', ')}}`;
})();

/**
 * The keys RELEASE_AND_FINISH sends after moveToFinished's: the ones only the add needs (its id counter).
 * Throws when BullMQ's finish keys are not where ADD_KEYS_IN_FINISH says (a BullMQ that orders them
 * differently), rather than adding a follow-up job under the wrong keys.
 */
export function finishAddKeys(addKeys: readonly string[], finishKeys: readonly string[]): string[] {
  const extra: string[] = [];
  ADD_KEYS_IN_FINISH.forEach((at, i) => {
    if (at < 0) extra.push(addKeys[i]!);
    else if (finishKeys[at] !== addKeys[i]) throw new Error(`bullmq's moveToFinished keys are not in the order Ripple composes (key ${i} of the add, ${addKeys[i]}, is not at ${at}): check the pinned bullmq version`);
  });
  return extra;
}

/** A Redis client stand-in that records the arguments BullMQ would send instead of sending them. */
interface Capture {
  runCommand(name: string, args: unknown[]): Promise<string>;
}

const capturedArgs = z.tuple([z.instanceof(Buffer), z.string(), z.instanceof(Buffer)]);

/**
 * The three ARGV BullMQ's addStandardJob takes for a job named `name` with `data` and `opts` (no id,
 * no delay): built by BullMQ itself (its Job.addJob, with a client that only records), so
 * options, timestamps and encoding are exactly what Queue.add would send.
 */
export async function bullAddArgs(queue: Queue, name: string, data: unknown, opts: Record<string, unknown>): Promise<[Buffer, string, Buffer]> {
  let args: unknown[] | undefined;
  const capture: Capture = {
    runCommand: (_name, sent) => {
      args = sent;
      return Promise.resolve('');
    },
  };
  const job = new Job(queue, name, data, { ...opts, jobId: undefined, delay: undefined });
  // As Queue.add: the options validated, then the backend's addStandardJob (no delay, no priority, no parent).
  await job.addJob(capture as never);
  if (!args) throw new Error('bullmq did not build addJob arguments');
  // addStandardJob: 9 keys, then packed args, data, packed opts.
  return capturedArgs.parse(args.slice(9));
}
