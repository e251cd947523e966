/**
 * Test fixtures for the planners: ModelServings built through `parseModelServing` (so defaults are
 * Kthena's), pods in any state, and `Steps`, which applies a plan's actions to a set of plain objects
 * so a scenario can be followed reconcile by reconcile. `Steps` is bookkeeping for pure unit tests,
 * not an API server: no admission, no garbage collection, no scheduling — the test says what happens.
 */
import type { V1ControllerRevision, V1Pod, V1Service } from '@kubernetes/client-node';
import { parseModelServing, type ModelServing } from '../../../api/modelserving.js';
import { sortedJson } from '../../../kube/json.js';
import { describeAction } from './actions.js';
import { LABEL_GROUP_NAME, LABEL_REVISION, LABEL_ROLE, LABEL_ROLE_ID } from './names.js';
import { planModelServing, type ObservedState, type Plan } from './plan.js';
import type { RoleStatusSnapshot } from './role-status.js';

export const T0 = Date.parse('2026-01-01T00:00:00Z');

export function container(image = 'vllm:v1', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'main', image, ...extra };
}

export function roleSpec(name: string, opts: { replicas?: number; workers?: number; image?: string } = {}): Record<string, unknown> {
  const workers = opts.workers ?? 0;
  return {
    name,
    ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
    workerReplicas: workers,
    entryTemplate: { spec: { containers: [container(opts.image)] } },
    ...(workers > 0 ? { workerTemplate: { spec: { containers: [container(opts.image)] } } } : {}),
  };
}

export function manifest(spec: Record<string, unknown> = {}, name = 'llm'): Record<string, unknown> {
  return {
    apiVersion: 'workload.serving.volcano.sh/v1alpha1',
    kind: 'ModelServing',
    metadata: { name, namespace: 'ns', uid: 'uid-1', generation: 1 },
    spec: { template: { roles: [roleSpec('prefill')] }, ...spec },
  };
}

export function makeMS(spec: Record<string, unknown> = {}, name = 'llm'): ModelServing {
  const parsed = parseModelServing(manifest(spec, name));
  if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
  return parsed.value;
}

export interface PodOptions {
  group: string;
  role: string;
  index: number;
  podIndex?: number;
  revision?: string;
  hash?: string;
  ready?: boolean;
  phase?: string;
  terminating?: boolean;
  restarts?: number;
  cost?: number;
  uid?: string;
  owner?: { name: string; uid: string };
  createdAt?: number;
  notReadySince?: number;
  scheduled?: boolean;
  groupSize?: number;
}

export function pod(o: PodOptions): V1Pod {
  const roleIdValue = `${o.role}-${o.index}`;
  const podIndex = o.podIndex ?? 0;
  const name = `${o.group}-${roleIdValue}-${podIndex}`;
  const ready = o.ready ?? true;
  const phase = o.phase ?? (ready ? 'Running' : 'Pending');
  const labels: Record<string, string> = {
    'modelserving.volcano.sh/name': o.owner?.name ?? o.group.replace(/-\d+$/, ''),
    [LABEL_GROUP_NAME]: o.group,
    [LABEL_ROLE]: o.role,
    [LABEL_ROLE_ID]: roleIdValue,
  };
  if (o.revision) labels[LABEL_REVISION] = o.revision;
  if (o.hash) labels['modelserving.volcano.sh/role-template-hash'] = o.hash;
  if (podIndex === 0) labels['modelserving.volcano.sh/entry'] = 'true';
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: o.uid ?? `uid-${name}`,
      labels,
      ...(o.cost !== undefined ? { annotations: { 'controller.kubernetes.io/pod-deletion-cost': String(o.cost) } } : {}),
      ownerReferences: [
        {
          apiVersion: 'workload.serving.volcano.sh/v1alpha1',
          kind: 'ModelServing',
          name: o.owner?.name ?? 'llm',
          uid: o.owner?.uid ?? 'uid-1',
          controller: true,
        },
      ],
      creationTimestamp: new Date(o.createdAt ?? T0),
      ...(o.terminating ? { deletionTimestamp: new Date(T0) } : {}),
    },
    spec: {
      containers: [{ name: 'main', image: 'x', ...(o.groupSize ? { env: [{ name: 'GROUP_SIZE', value: String(o.groupSize) }] } : {}) }],
      ...(o.scheduled === false ? {} : { nodeName: 'node-1' }),
    },
    status: {
      phase,
      conditions: [
        ...(o.scheduled === false ? [] : [{ type: 'PodScheduled', status: 'True' }]),
        {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          lastTransitionTime: new Date(o.notReadySince ?? o.createdAt ?? T0),
        },
      ],
      containerStatuses: [
        { name: 'main', image: 'x', imageID: '', ready, restartCount: o.restarts ?? 0 },
      ],
    },
  };
}

/** Follows a scenario reconcile by reconcile: plan, apply, and let the test move pods along. */
export class Steps {
  pods = new Map<string, V1Pod>();
  services = new Map<string, V1Service>();
  revisions = new Map<string, V1ControllerRevision>();
  roleStatus: RoleStatusSnapshot | undefined;
  now = T0;
  last: Plan | undefined;
  private seq = 0;

  constructor(public ms: ModelServing) {}

  observed(extra: Partial<ObservedState> = {}): ObservedState {
    return {
      modelServing: this.ms,
      pods: [...this.pods.values()],
      services: [...this.services.values()],
      controllerRevisions: [...this.revisions.values()],
      roleStatus: this.roleStatus,
      cluster: { volcanoPodGroups: false },
      now: this.now,
      ...extra,
    };
  }

  plan(extra: Partial<ObservedState> = {}): Plan {
    this.last = planModelServing(this.observed(extra));
    return this.last;
  }

  /** Applies the first `limit` actions (all by default), writes status and the role datastore. */
  apply(plan: Plan, limit = plan.actions.length): string[] {
    const done: string[] = [];
    for (const a of plan.actions.slice(0, limit)) {
      done.push(describeAction(a));
      switch (a.kind) {
        case 'createPod': {
          const name = a.pod.metadata?.name ?? '';
          if (this.pods.has(name)) break;
          this.pods.set(name, {
            ...a.pod,
            metadata: { ...a.pod.metadata, uid: `u${++this.seq}`, creationTimestamp: new Date(this.now) },
            status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] },
          });
          break;
        }
        case 'deletePod': {
          const p = this.pods.get(a.name);
          if (p && p.metadata?.uid === a.uid) p.metadata = { ...p.metadata, deletionTimestamp: new Date(this.now) };
          break;
        }
        case 'createService':
          this.services.set(a.service.metadata?.name ?? '', { ...a.service, metadata: { ...a.service.metadata, uid: `s${++this.seq}` } });
          break;
        case 'deleteService':
          this.services.delete(a.name);
          break;
        case 'createControllerRevision':
          this.revisions.set(a.object.metadata?.name ?? '', { ...a.object, metadata: { ...a.object.metadata, uid: `r${++this.seq}`, resourceVersion: String(this.seq) } });
          break;
        case 'deleteControllerRevision':
          this.revisions.delete(a.name);
          break;
        case 'renumberControllerRevision': {
          const r = this.revisions.get(a.name);
          if (r) this.revisions.set(a.name, { ...r, revision: a.revision });
          break;
        }
        default:
          break;
      }
    }
    if (limit === plan.actions.length) {
      this.ms = { ...this.ms, status: plan.status };
      this.roleStatus = plan.roleStatus;
    }
    return done;
  }

  /** Pods being deleted finish terminating. */
  gone(): void {
    for (const [name, p] of this.pods) if (p.metadata?.deletionTimestamp) this.pods.delete(name);
  }

  /** Every live pod (or those matching `which`) becomes Running and Ready. */
  ready(which: (p: V1Pod) => boolean = () => true): void {
    for (const p of this.pods.values()) {
      if (p.metadata?.deletionTimestamp || !which(p)) continue;
      p.status = { phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'True' }] };
    }
  }

  /** Reconciles until nothing is left to do, moving every pod to ready and finishing deletions. */
  converge(maxSteps = 50): void {
    for (let i = 0; i < maxSteps; i++) {
      this.gone();
      this.ready();
      const plan = this.plan();
      if (plan.actions.length === 0 && sortedJson(plan.status) === sortedJson(this.ms.status ?? {})) return;
      this.apply(plan);
    }
    throw new Error('did not converge');
  }

  setSpec(mutate: (spec: Record<string, unknown>) => void): void {
    const raw = JSON.parse(JSON.stringify(this.ms)) as Record<string, unknown> & { metadata: { generation: number } };
    mutate(raw.spec as Record<string, unknown>);
    raw.metadata.generation += 1;
    const parsed = parseModelServing(raw);
    if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
    this.ms = parsed.value;
  }

  /** group name → revision label of its live pods (sorted, joined when mixed). */
  groupRevisions(): Record<string, string> {
    const out: Record<string, Set<string>> = {};
    for (const p of this.pods.values()) {
      if (p.metadata?.deletionTimestamp) continue;
      const g = p.metadata?.labels?.[LABEL_GROUP_NAME] ?? '';
      (out[g] ??= new Set()).add(p.metadata?.labels?.[LABEL_REVISION] ?? '');
    }
    return Object.fromEntries(
      Object.entries(out)
        .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
        .map(([g, s]) => [g, [...s].sort().join('+')]),
    );
  }

  livePodNames(): string[] {
    return [...this.pods.values()]
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => p.metadata?.name ?? '')
      .sort();
  }

  /** How many ServingGroups are not fully ready (missing groups included). */
  unavailableGroups(): number {
    return Math.max(0, this.ms.spec.replicas - (this.last?.status.availableReplicas ?? 0));
  }
}
