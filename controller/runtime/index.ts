// keelson/runtime: the controller runtime as a library. Importing it reads no environment and installs no
// process-wide hook; runController is the one entry point that reads argv, the environment and signals.
export { Manager, type ManagerOptions, type Operator, type OperatorContext } from './manager.ts';
export { runController, type DeferredOperator, type Program } from './run.ts';
export { Controller, type ControllerSpec, type ReconcileContext, type ReconcileResult, type Request,
  type Watch } from './controller.ts';
export { Cache } from './cache.ts';
export { defaultInformerOptions, Informer, type CacheView, type InformerHandler, type InformerOptions } from './informer.ts';
export { Client, UndeclaredCallError, type ListOptions, type ObjectList, type PatchType } from './client.ts';
export { ApiError, RestClient } from './rest.ts';
export { findCondition, mergePatch, setCondition, timestamp, writeStatus, writeStatusWithConditions, type Condition,
  type ConditionStatus } from './status.ts';
export { EventRecorder, type EventType } from './events.ts';
export { withFinalizer, type FinalizerSteps } from './finalizer.ts';
export { LeaderElector, type LeaderElectionOptions } from './leader.ts';
export { Metrics } from './metrics.ts';
export { eventPermissions, leaderElectionPermissions } from './permissions.ts';
export { applyIfChanged, controllerReference, isControlledBy, type Owner } from './objects.ts';
export { readPrimary, type Primary } from './primary.ts';
export { forgetUid, UidsSeen } from './memos.ts';
export { primariesConcerning, primariesSelecting, requestOf } from './mappers.ts';
export { matches, type LabelSelector } from './selectors.ts';
export { apiVersionOf, core, keyOf, kindType, parseKey, pathOf, types, type KubeObject, type ObjectMeta,
  type OwnerReference, type ResourceType } from './resources.ts';
export { podReady, type ContainerStatus, type Pod, type PodSpec, type PodStatus } from './core.ts';
export { createLogger } from './log.ts';
export { loadKubeConfig } from './kubeconfig.ts';
