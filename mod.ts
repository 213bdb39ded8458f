/**
 * kubeno: write Kubernetes operators in TypeScript on Deno.
 *
 * A resource is described once (`defineResource`, or a built-in kind such as `Deployment`);
 * `reconcile(resource, {...})` turns it into a level-based controller running on shared
 * informer caches; `operator({...}).main()` is the program's command line, which also installs
 * its own CRDs. Start with `reconcile`.
 *
 * @example Describe a kind that already exists on the server
 * ```ts
 * import { resource } from "./mod.ts";
 * const Widgets = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * if (Widgets.plural !== "widgets") throw new Error();
 * ```
 *
 * @module
 */
export type {
  Condition,
  KubeObject,
  ManagedFieldsEntry,
  ObjectMeta,
  ObjectRef,
  OpenObject,
  OwnerReference,
} from "./src/core/object.ts";
export {
  gvkString,
  type ObjectOf,
  pluralize,
  type Resource,
  resource,
  type ResourceInit,
} from "./src/core/resource.ts";
export {
  type CustomResource,
  defineResource,
  type DefineResourceOptions,
  type OutputOf,
  type ResourceIssue,
  type ResourceObject,
  ResourceValidationError,
  type SafeParseResult,
  type ScaleOptions,
} from "./src/schema/define_resource.ts";
export {
  cel,
  type EmbeddedObjectSchema,
  embeddedResource,
  intOrString,
  listMap,
  listType,
  mapType,
  type StructuralSchemaOptions,
  toStructuralSchema,
} from "./src/schema/schema.ts";
export type {
  CustomResourceDefinitionCondition,
  CustomResourceDefinitionNames,
  CustomResourceDefinitionSpec,
  CustomResourceDefinitionVersion,
  JSONSchemaProps,
  PrinterColumn,
  ScaleSubresource,
  ValidationRule,
} from "./src/core/crd.ts";
export { Client, type ClientOptions, createClient, type RequestMetric } from "./src/client/client.ts";
export type {
  ApplyObject,
  ApplyOptions,
  DeleteOptions,
  JsonPatchOperation,
  ListOptions,
  MergePatch,
  ObjectList,
  ObjectOptions,
  PatchOptions,
  RawWatchEvent,
  WatchOptions as RawWatchOptions,
  WriteOptions,
} from "./src/client/types.ts";
export {
  ApiError,
  type ApiErrorTarget,
  ConnectionError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  isUnauthorized,
  type Status,
  type StatusCause,
  type StatusDetails,
} from "./src/client/api_error.ts";
export {
  type ClusterAccess,
  type Credentials,
  KubeconfigError,
  type KubeconfigOptions,
  loadKubeconfig,
} from "./src/client/kubeconfig.ts";
export {
  ConfigMap,
  type Container,
  type ContainerPort,
  type EnvVar,
  Event,
  type LabelSelector,
  Namespace,
  Node,
  Pod,
  type PodSpec,
  type PodTemplateSpec,
  type ResourceCondition,
  Secret,
  Service,
  ServiceAccount,
  type ServicePort,
} from "./src/core/kinds.ts";
export {
  DaemonSet,
  Deployment,
  Job,
  ReplicaSet,
  type ReplicaStatus,
  StatefulSet,
  type WorkloadSpec,
} from "./src/core/kinds_workloads.ts";
export {
  ClusterRole,
  ClusterRoleBinding,
  CustomResourceDefinition,
  EventsV1Event,
  Lease,
  MutatingWebhookConfiguration,
  type PolicyRule,
  Role,
  RoleBinding,
  type RoleRef,
  type Subject,
  ValidatingWebhookConfiguration,
  type Webhook,
  type WebhookClientConfig,
} from "./src/core/kinds_cluster.ts";
export {
  type BackoffOptions,
  watch,
  type WatchClient,
  type WatchEvent,
  type WatchOptions,
  type WatchQuery,
  type WatchStats,
  WatchStream,
} from "./src/runtime/watch/watch.ts";
export { WatchError, type WatchErrorInit } from "./src/runtime/watch/watch_error.ts";
export {
  type IndexFunc,
  objectKey,
  type ObjectName,
  Store,
  type StoreChanges,
  type StoreListOptions,
  type StoreOptions,
} from "./src/runtime/cache/store.ts";
export {
  Informer,
  informer,
  type InformerHandlers,
  type InformerHealth,
  type InformerOptions,
  stripManagedFields,
} from "./src/runtime/cache/informer.ts";
export {
  InformerFactory,
  type InformerFactoryOptions,
  type InformerQuery,
} from "./src/runtime/cache/informer_factory.ts";
export {
  WorkQueue,
  type WorkQueueGetOptions,
  type WorkQueueItem,
  type WorkQueueMetrics,
  type WorkQueueOptions,
} from "./src/runtime/queue/workqueue.ts";
export {
  bucketRateLimiter,
  type BucketRateLimiterOptions,
  defaultControllerRateLimiter,
  type DefaultControllerRateLimiterOptions,
  exponentialRateLimiter,
  type ExponentialRateLimiterOptions,
  maxOfRateLimiter,
  type RateLimiter,
} from "./src/runtime/queue/rate_limiter.ts";
export { type Clock, realClock, sleepOn, type TimerId } from "./src/util/clock.ts";
export { type Operator, operator } from "./src/operator/operator.ts";
export type {
  LeaderElectionOptions,
  OperatorController,
  OperatorOptions,
  OperatorWebhook,
  WebhookManifestContext,
} from "./src/operator/options.ts";
export {
  type OperatorManifests,
  operatorManifests,
  type OperatorManifestsInit,
} from "./src/operator/manifests.ts";
export { deriveRbac, type DeriveRbacOptions, type OperatorRbac } from "./src/operator/rbac.ts";
export {
  type Controller,
  type MapFunc,
  reconcile,
  type ReconcileContext,
  type ReconcileOptions,
  type ReconcileResult,
  type Requeue,
  requeue,
  type StatusOf,
  TerminalError,
  type WatchSpec,
} from "./src/runtime/controller/reconcile.ts";
export {
  and,
  annotationsChanged,
  deletionStarted,
  generationChanged,
  labelsChanged,
  not,
  or,
  type Predicate,
  type PredicateEvent,
  resourceVersionChanged,
} from "./src/runtime/controller/predicates.ts";
export {
  addFinalizerPatch,
  finalizer,
  type FinalizerAction,
  finalizerAction,
  type FinalizerEvent,
  type FinalizerOptions,
  hasFinalizer,
  removeFinalizerPatch,
} from "./src/runtime/controller/finalizer.ts";
export {
  controllerOf,
  ownerReference,
  type OwnerReferenceOptions,
  setControllerReference,
} from "./src/core/owner.ts";
export {
  type EventClient,
  EventRecorder,
  type EventRecorderOptions,
  type EventType,
} from "./src/runtime/controller/events.ts";
export {
  type ConditionInput,
  findCondition,
  isFalse,
  isTrue,
  setCondition,
  type SetConditionOptions,
} from "./src/core/conditions.ts";
export {
  type ControllerMetrics,
  ControllerRuntime,
  type ControllerRuntimeOptions,
  type ReconcileOutcome,
  type ReconcileSample,
} from "./src/runtime/controller/runner.ts";
export {
  createManager,
  type InformerStatus,
  type LeaderElectionContext,
  Manager,
  type ManagerHealth,
  type ManagerOptions,
} from "./src/runtime/manager/manager.ts";
export {
  type LeaderElectionEnd,
  type LeaderElectionMetrics,
  LeaderElector,
  leaderElector,
  type LeaderElectorOptions,
  type LeaseClient,
} from "./src/runtime/manager/leader_election.ts";
export {
  Counter,
  formatValue,
  Gauge,
  Histogram,
  type HistogramOptions,
  type HttpEndpoint,
  type LabelValues,
  type MetricOptions,
  METRICS_CONTENT_TYPE,
  Registry,
  serveMetrics,
  type ServeMetricsOptions,
} from "./src/metrics/registry.ts";
export {
  type ControllerMetrics as PrometheusControllerMetrics,
  controllerMetrics,
  leaderElectionMetrics,
  type ReconcileResultLabel,
  restClientMetrics,
  workqueueMetrics,
} from "./src/metrics/controller_metrics.ts";
export { registerProcessMetrics } from "./src/metrics/process_metrics.ts";
export {
  type CheckResult,
  type HealthCheck,
  HealthChecks,
  informersSynced,
  type ProbedInformer,
  type ProbeKind,
  serveProbes,
  type ServeProbesOptions,
  watchesNotStalled,
  type WatchesNotStalledOptions,
} from "./src/runtime/manager/health.ts";
export {
  configureLogging,
  getLogger,
  type LogFormat,
  type Logger,
  type LoggingOptions,
  type LogLevel,
  redact,
  resetLogging,
} from "./src/util/log.ts";
export {
  type Admission,
  admission,
  type AdmissionContext,
  type AdmissionContextBase,
  AdmissionDenied,
  type AdmissionOptions,
  type ValidatedOperation,
  type ValidationResult,
  type WebhookEndpoint,
} from "./src/webhook/admission.ts";
export {
  type AdmissionOperation,
  type AdmissionRequest,
  type AdmissionResponse,
  type AdmissionReview,
  type GroupVersionKind,
  parseAdmissionReview,
  type ParsedReview,
  reviewOf,
  type UserInfo,
} from "./src/webhook/admission_review.ts";
export { type RunningWebhooks, serveWebhooks, type ServeWebhooksOptions } from "./src/webhook/webhooks.ts";
export {
  checkCertificate,
  startWebhookServer,
  type TlsCertificate,
  type WebhookServer,
  type WebhookServerOptions,
} from "./src/webhook/server.ts";
export {
  type CertificateSource,
  type SelfManagedCertificates,
  selfManagedCertificates,
  type SelfManagedCertificatesOptions,
  type WebhookCertificate,
} from "./src/webhook/self_managed_certs.ts";
export {
  type CertificateDir,
  type CertificateDirOptions,
  readCertificateDir,
  watchCertificateDir,
} from "./src/webhook/cert_dir.ts";
export {
  type WebhookConfigurationOptions,
  type WebhookConfigurations,
  webhookConfigurations,
  webhookManifests,
  type WebhookManifestsOptions,
  webhookService,
  type WebhookServiceOptions,
  type WebhookSpec,
  type WebhookTarget,
} from "./src/webhook/manifests.ts";
export {
  patchCaBundle,
  readCaBundle,
  registerWebhooks,
  type RegisterWebhooksOptions,
  unregisterWebhooks,
} from "./src/webhook/register.ts";
export { admissionHandler, type AdmissionHandlerOptions } from "./src/webhook/handler.ts";
export { fromYaml, toYaml } from "./src/util/yaml.ts";
export {
  z,
  type ZodArray,
  type ZodInt,
  type ZodLooseObject,
  type ZodObject,
  type ZodOptional,
  type ZodRecord,
  type ZodString,
  type ZodType,
  type ZodUnion,
} from "./src/util/zod.ts";
