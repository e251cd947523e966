import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import ts from 'typescript';
import { z } from 'zod';
import { kubeRequest } from '../../kube/raw.js';
import { functionStateKey } from '../../queue/fenced-write.js';
import { RESYNC_JOB, WorkQueue } from '../../queue/work-queue.js';
import { createLogger } from '../../base/log.js';
import { checkEffects, checkHistory, parseHistory, type ReconcileRecord } from '../faults/checker.js';
import { ApiEffects, apiReads, stateStamps } from '../faults/harness/effects.js';
import { leftovers } from '../faults/harness/storm.js';
import { FAULT_FUNCTION, SOURCE_LABEL, faultStateNames } from '../fixtures/serverless-fault-function.js';
import { waitFor, type TestSandbox } from './sandbox.js';

// The fault function (test/fixtures/serverless-fault-function.ts) run by Ripple's image on the real node, and one
// case of it: used by the serverless fault cases (test/integration/real-node-serverless-faults.test.ts) and the
// serverless bench (bench/serverless-functions.ts).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Where the chart mounts the module in every Ripple pod (a hostPath: the real node is this machine). */
export const FAULT_MODULE_DIR_IN_POD = '/ripple-faults';

/**
 * Writes the fixture as Ripple's image loads it into `dir`: JavaScript whose one import is the image's own SDK, so
 * its API calls and state writes go through the image's reconcile scope and fencing. Returns the chart values that
 * mount it into every pod and register the function (extraFunctions, extraVolumes, extraVolumeMounts).
 */
export function faultFunctionValues(dir: string): Record<string, unknown> {
  const source = readFileSync(path.join(root, 'test', 'fixtures', 'serverless-fault-function.ts'), 'utf8');
  const js = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText;
  if (!js.includes("'../../sdk/index.js'")) throw new Error('the fault function no longer imports ../../sdk/index.js: update faultFunctionValues');
  const file = 'fault-function.mjs';
  writeFileSync(path.join(dir, file), js.replaceAll("'../../sdk/index.js'", "'/app/dist/sdk/index.js'"));
  // The image runs as uid 1000.
  chmodSync(dir, 0o755);
  chmodSync(path.join(dir, file), 0o644);
  return {
    extraFunctions: [
      {
        name: FAULT_FUNCTION,
        module: `${FAULT_MODULE_DIR_IN_POD}/${file}`,
        primary: { apiGroup: '', resource: 'configmaps' },
        watchRules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] }],
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'update'] }],
      },
    ],
    extraVolumes: [{ name: 'fault-function', hostPath: { path: dir, type: 'Directory' } }],
    extraVolumeMounts: [{ name: 'fault-function', mountPath: FAULT_MODULE_DIR_IN_POD, readOnly: true }],
  };
}

const slowStartedSchema = z.object({ pod: z.string(), token: z.string(), at: z.number() });
const slowDoneSchema = z.object({
  outcome: z.string(),
  effects: z.array(z.object({ kind: z.string(), outcome: z.string(), detail: z.string().optional() })),
  pausedMs: z.number().optional(),
});

export interface FaultFunctionReport {
  case: string;
  events: number;
  reconciles: number;
  effects: number;
  overlaps: number;
  tokenOrder: number;
  lost: number;
  staleLanded: number;
  leaked: number;
  violations: string[];
}

/**
 * One case of the fault function: its own source ConfigMaps (the watched objects; each event bumps data.v), its own
 * effect ConfigMaps (every write to them seen through a watch from their creation), and its own order, state,
 * commit and history lists in the release's Redis.
 */
export class FaultFunctionCase {
  readonly names: string[];
  /** Each key's version now, and when each version's event was sent (ms). */
  readonly versions = new Map<string, number>();
  readonly sentAt = new Map<string, number>();
  private api?: ApiEffects;
  events = 0;

  constructor(
    private readonly sb: TestSandbox,
    private readonly redis: Redis,
    private readonly prefix: string,
    readonly label: string,
    keys: number,
  ) {
    this.names = Array.from({ length: keys }, (_, i) => `${label}-${i}`);
  }

  key(name: string): string {
    return `${this.sb.namespace}/${name}`;
  }

  stateKey(name: keyof ReturnType<typeof faultStateNames>): string {
    return functionStateKey(this.prefix, FAULT_FUNCTION, faultStateNames(this.label)[name]);
  }

  async start(): Promise<this> {
    this.api = await ApiEffects.start(this.sb.kc, this.sb.namespace, this.label, this.names.map((n) => this.key(n)));
    for (const name of this.names) {
      this.versions.set(this.key(name), 1);
      this.sentAt.set(`${this.key(name)}@1`, Date.now());
      await kubeRequest(this.sb.kc, `/api/v1/namespaces/${this.sb.namespace}/configmaps`, {
        method: 'POST',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { [SOURCE_LABEL]: this.label } }, data: { v: '1' } },
      });
      this.events++;
    }
    return this;
  }

  /** One watch event: the source ConfigMap's data.v goes up (with `extra`, e.g. the slow reconcile's settings). */
  async event(name: string, extra: Record<string, string> = {}): Promise<void> {
    const key = this.key(name);
    const v = (this.versions.get(key) ?? 0) + 1;
    this.versions.set(key, v);
    this.sentAt.set(`${key}@${v}`, Date.now());
    await kubeRequest(this.sb.kc, `/api/v1/namespaces/${this.sb.namespace}/configmaps/${name}`, {
      method: 'PATCH',
      contentType: 'application/merge-patch+json',
      body: { data: { v: String(v), ...extra } },
    });
    this.events++;
  }

  /**
   * `n` events on random keys (but `except`), up to four at a time on distinct keys: two PATCHes of one key in flight
   * at once may land in either order, and the key's final version would not be the one counted.
   */
  async storm(n: number, except?: string): Promise<void> {
    const names = this.names.filter((x) => x !== except);
    for (let sent = 0; sent < n; ) {
      const batch = [...names].sort(() => Math.random() - 0.5).slice(0, Math.min(4, n - sent));
      await Promise.all(batch.map((name) => this.event(name)));
      sent += batch.length;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async slowStarted(timeoutMs = 60_000): Promise<z.infer<typeof slowStartedSchema>> {
    const text = await waitFor(`the slow reconcile of ${this.label} to start`, timeoutMs, async () => (await this.redis.get(this.stateKey('slowStarted'))) ?? undefined, 20);
    return slowStartedSchema.parse(JSON.parse(text));
  }

  async slowDone(timeoutMs = 90_000): Promise<z.infer<typeof slowDoneSchema>> {
    const text = await waitFor(`the slow reconcile of ${this.label} to end`, timeoutMs, async () => (await this.redis.get(this.stateKey('slowDone'))) ?? undefined);
    return slowDoneSchema.parse(JSON.parse(text));
  }

  /** Every accepted reconcile, in commit order. */
  async history(): Promise<ReconcileRecord[]> {
    return parseHistory((await this.redis.lrange(this.stateKey('history'), 0, -1)).join('\n'));
  }

  /** Waits until every key's last commit is at its current version. */
  async converged(timeoutMs: number): Promise<void> {
    const finals = new Map(this.versions);
    await waitFor(
      `every key of ${this.label} committed at its final version`,
      timeoutMs,
      async () => {
        const commits = await this.redis.hgetall(this.stateKey('commits'));
        return [...finals].every(([k, v]) => commits[k] === String(v)) ? true : undefined;
      },
      100,
    );
  }

  /**
   * Waits for every key's commit to reach its final version and the function's queue to hold nothing, then judges
   * the whole history and every effect the servers hold.
   */
  async check(timeoutMs = 150_000): Promise<FaultFunctionReport> {
    const queue = new WorkQueue({ name: FAULT_FUNCTION, connection: this.redis, prefix: this.prefix, log: createLogger('fault-function-case', 'error') });
    try {
      const finals = new Map(this.versions);
      await this.converged(timeoutMs);
      // The function's resync tick (a repeatable BullMQ job) stays delayed: it is not work left behind.
      let left: Record<string, number> = {};
      await waitFor(
        `the ${FAULT_FUNCTION} queue to drain`,
        60_000,
        async () => {
          left = await leftovers(this.redis, queue);
          left['bull:delayed'] = (left['bull:delayed'] ?? 0) - (await queue.bull.getDelayed()).filter((j) => j.name === RESYNC_JOB).length;
          return Object.values(left).every((n) => n === 0) ? true : undefined;
        },
        200,
      ).catch((err: unknown) => {
        throw new Error(`${String(err)}; left: ${JSON.stringify(left)}`);
      });
      const records = await this.history();
      const history = checkHistory(records, finals);
      const state = await stateStamps(this.redis, this.stateKey('order'));
      const effects = checkEffects([...apiReads(records), ...state.reads], [...(await this.api!.landed()), ...state.landed], records);
      return {
        case: this.label,
        events: this.events,
        reconciles: history.reconciles,
        effects: effects.effects,
        overlaps: history.overlaps,
        tokenOrder: history.tokenOrder,
        lost: history.lost,
        staleLanded: effects.staleLanded,
        leaked: Object.values(left).reduce((a, b) => a + b, 0),
        violations: [...history.violations, ...effects.violations].slice(0, 5).map((v) => `${v.kind} ${v.key}: ${v.detail}`),
      };
    } finally {
      await queue.close();
    }
  }

  async stop(): Promise<void> {
    await this.api?.stop();
  }
}
