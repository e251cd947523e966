/**
 * The PodOpsLifecycle client for other controllers: operation controllers (begin/allowOps/finish/…), cooperation
 * controllers (syncCooperation), and the owner-side helpers ModelServing uses (withLifecycle,
 * deleteThroughLifecycle). The wire names and adapter types are re-exported so callers need only this module.
 */
export { PodGoneError, type LifecycleClientDeps } from './deps.js';
export { operationClient, type AllowOpsOutcome, type OperationClient, type WriteOptions, type WriteOutcome } from './operation.js';
export { cooperatorFor, syncCooperation, type CooperationOutcome, type SyncCooperationOptions } from './cooperation.js';
export {
  cancelDeleteThroughLifecycle,
  deleteThroughLifecycle,
  deletionAdapter,
  type DeleteThroughLifecycleOptions,
  type DeleteThroughLifecycleResult,
} from './delete-through-lifecycle.js';
export { withLifecycle, type PodShape } from './with-lifecycle.js';
export { LifecycleConflictError } from '../pod-access/pod-api.js';
export type { LifecyclePod, PodRef } from '../pod-access/pod.js';
export {
  AVAILABLE_CONDITIONS_ANNOTATION,
  clearPreparingToDelete,
  CONTROL_LABEL,
  CONTROL_LABEL_VALUE,
  isControlled,
  Label,
  lifecycleFinalizerFor,
  markPreparingToDelete,
  OperationTypes,
  OpsLifecycleError,
  PROTECTION_FINALIZER_PREFIX,
  SERVICE_READY_CONDITION,
  type Cooperator,
  type MetadataHook,
  type OperationAdapter,
} from '../protocol/index.js';
