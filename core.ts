/**
 * The vocabulary every layer of kubeno shares: object and metadata types, the
 * {@linkcode Resource} handle of a kind, every built-in kind kubeno knows, status conditions,
 * owner references and the object key (`namespace/name`).
 *
 * Nothing here talks to an API server; the root entry point re-exports the common kinds.
 *
 * @example Owner references and conditions on plain objects
 * ```ts
 * import { ConfigMap, objectKey, setCondition, setControllerReference } from "./core.ts";
 *
 * const owner = { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w", namespace: "ns", uid: "1" } };
 * const cm: ConfigMap = { metadata: { name: "w-config", namespace: "ns" } };
 * setControllerReference(owner, cm);
 * if (cm.metadata.ownerReferences?.[0].controller !== true) throw new Error();
 * if (objectKey(cm) !== "ns/w-config" || ConfigMap.plural !== "configmaps") throw new Error();
 * const conditions = setCondition([], { type: "Ready", status: "True", reason: "Done", message: "" });
 * if (conditions[0].status !== "True") throw new Error();
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
export { objectKey, type ObjectName, parseObjectKey } from "./src/core/object_key.ts";
export {
  isMetadataOnly,
  metadataOnly,
  type MetadataOnlyResource,
  type PartialObjectMetadata,
} from "./src/core/metadata_only.ts";
export {
  gvkString,
  type ObjectOf,
  pluralize,
  type Resource,
  resource,
  type ResourceInit,
} from "./src/core/resource.ts";
export {
  type ConditionInput,
  findCondition,
  isFalse,
  isTrue,
  setCondition,
  type SetConditionOptions,
} from "./src/core/conditions.ts";
export {
  controllerOf,
  ownerReference,
  type OwnerReferenceOptions,
  setControllerReference,
} from "./src/core/owner.ts";
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
