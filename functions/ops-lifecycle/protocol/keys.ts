/**
 * The PodOpsLifecycle wire names. They must match KusionStack's kube-api byte for byte: kuperator, ResourceConsist
 * and any tool already written against them read the same Pods Ripple writes.
 */

/** Only Pods carrying `kusionstack.io/control=true` take part in the lifecycle. */
export const CONTROL_LABEL = 'kusionstack.io/control';
export const CONTROL_LABEL_VALUE = 'true';

/**
 * Per-ID label prefixes: each key is `<prefix>/<id>`. Values are decimal Unix nanoseconds, except the three
 * `*-operation-type` prefixes, whose value is the operation type.
 */
export const LabelPrefix = {
  operating: 'operating.podopslifecycle.kusionstack.io',
  operationType: 'operation-type.podopslifecycle.kusionstack.io',
  undoOperationType: 'undo-operation-type.podopslifecycle.kusionstack.io',
  doneOperationType: 'done-operation-type.podopslifecycle.kusionstack.io',
  preCheck: 'pre-check.podopslifecycle.kusionstack.io',
  preChecked: 'pre-checked.podopslifecycle.kusionstack.io',
  preparing: 'preparing.podopslifecycle.kusionstack.io',
  operate: 'operate.podopslifecycle.kusionstack.io',
  operated: 'operated.podopslifecycle.kusionstack.io',
  postCheck: 'post-check.podopslifecycle.kusionstack.io',
  postChecked: 'post-checked.podopslifecycle.kusionstack.io',
  completing: 'completing.podopslifecycle.kusionstack.io',
} as const;

export type PerIdLabel = keyof typeof LabelPrefix;

/** Every per-ID prefix, in protocol order; undo and done types sit where kube-api lists them. */
export const PER_ID_LABELS: readonly PerIdLabel[] = [
  'operating',
  'operationType',
  'preCheck',
  'preChecked',
  'preparing',
  'doneOperationType',
  'undoOperationType',
  'operate',
  'operated',
  'postCheck',
  'postChecked',
  'completing',
];

/** Per-ID labels whose value is a type rather than a timestamp. */
export const TYPE_VALUED_LABELS: ReadonlySet<PerIdLabel> = new Set(['operationType', 'undoOperationType', 'doneOperationType']);

/** `operation-permission.podopslifecycle.kusionstack.io/<type>=<ts>`: keyed by operation type, not by ID. */
export const PERMISSION_LABEL_PREFIX = 'operation-permission.podopslifecycle.kusionstack.io';

/** Fixed-key labels. */
export const Label = {
  serviceAvailable: 'podopslifecycle.kusionstack.io/service-available',
  stayOffline: 'podopslifecycle.kusionstack.io/stay-offline',
  preparingToDelete: 'podopslifecycle.kusionstack.io/preparing-to-delete',
  /** Put on new Pods by CollaSet (#297); cleared when service-available is added. */
  creating: 'podopslifecycle.kusionstack.io/creating',
  completing: 'podopslifecycle.kusionstack.io/completing',
} as const;

/** Readiness gate condition type; the lifecycle's only status field. */
export const SERVICE_READY_CONDITION = 'pod.kusionstack.io/service-ready';
/** Message kuperator writes on the condition; kept so tools that match on it keep working. */
export const SERVICE_READY_MESSAGE = 'updated by PodOpsLifecycle';
/** Event reason kuperator uses when it changes the condition. */
export const SERVICE_READY_EVENT_REASON = 'ServiceReady';

/** Cooperation controllers' finalizers start with this; any of them holds a Pod in Preparing. */
export const PROTECTION_FINALIZER_PREFIX = 'prot.podopslifecycle.kusionstack.io';

/** `{"expectedFinalizers":{"<Kind>/<ns>/<name>":"<finalizer>"}}` */
export const AVAILABLE_CONDITIONS_ANNOTATION = 'pod.kusionstack.io/available-conditions';

/** The built-in operation types of kuperator's adapters. A type is otherwise a free label value. */
export const OperationTypes = {
  update: 'update',
  scaleIn: 'scale-in',
  delete: 'delete',
} as const;

export function perIdKey(label: PerIdLabel, id: string): string {
  return `${LabelPrefix[label]}/${id}`;
}

export function permissionKey(operationType: string): string {
  return `${PERMISSION_LABEL_PREFIX}/${operationType}`;
}
