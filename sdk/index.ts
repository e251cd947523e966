// Ripple's public API: what a function of your own imports (`import { … } from 'ripple'`). Everything else in
// the package is internal and may change in any release; what is exported here changes only with a note in
// CHANGELOG.md. docs/writing-a-function.md, "Your own functions", shows a whole definition module.
//
// A definition module exports `definitions(env)` returning FunctionDefinition[] (or a default export doing
// the same); `ripple <mode> --functions-module PATH` (or RIPPLE_FUNCTIONS_MODULES) loads it beside the
// built-in functions, as a worker, behind the dispatcher and as `ripple serve`.

// What a function is: its source (primary resource and triggers), predicates, mapper and handler.
export type {
  FunctionDefinition,
  Handler,
  HandlerContext,
  MapContext,
  Mapper,
  MetricsDeps,
  ReconcileRequest,
  ReconcileResult,
  SweepContext,
  Trigger,
} from '../runtime/function.js';
export type { FunctionDefinitions, FunctionModule } from '../runtime/function-modules.js';

// Sources: the resource types a trigger watches (your own kinds are a ResourceRef literal).
export { Resources, apiVersionOf, collectionPath, objectPath } from '../kube/resources.js';
export type { ResourceRef } from '../kube/resources.js';
export type { KubeObject, OwnerReference } from '../kube/object.js';
export type { WatchEvent } from '../watcher/events.js';

// Predicates and mappers (controller-runtime's predicate and handler packages).
export {
  and,
  annotationsChanged,
  deletionStarted,
  generationChanged,
  labelSelector,
  labelsChanged,
  nameIs,
  namespaceIs,
  not,
  objectMatches,
  onlyEvents,
  or,
  resourceVersionChanged,
} from '../watcher/predicates.js';
export type { Predicate } from '../watcher/predicates.js';
export { mapToControllerOwner, mapToSelf } from '../watcher/mappers.js';
export { ONLY_METADATA, keepFields } from '../watcher/projection.js';
export type { Projection } from '../watcher/projection.js';

// What a handler calls: the API server (fenced by the reconcile's claim), typed errors, Events.
export { KubeApiError, isStatus, kubeRequest } from '../kube/raw.js';
export type { RawRequest } from '../kube/raw.js';
export { whileClaimed } from '../base/reconcile-scope.js';
export { ConnectivityError, TerminalError } from '../base/errors.js';
export type { EmittedEvent, EventSink } from '../runtime/events.js';
export type { Logger } from '../base/log.js';
