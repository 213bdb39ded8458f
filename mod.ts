/**
 * kubeno: write Kubernetes operators in TypeScript on Deno.
 *
 * A resource is described once (`defineResource`, or a built-in kind such as `Deployment`);
 * `reconcile(resource, {...})` turns it into a level-based controller running on shared
 * informer caches; `operator({...}).main()` is the program's command line, which also installs
 * its own CRDs. Start with `reconcile`.
 *
 * This entry point holds the happy path: what an operator's own file imports. The layers
 * below it have entry points of their own:
 *
 * | import | what it holds |
 * |---|---|
 * | `@kubeno/kubeno/core` | object types, every built-in kind, conditions, owner references, object keys |
 * | `@kubeno/kubeno/schema` | zod → structural OpenAPI, CRD types, schema markers |
 * | `@kubeno/kubeno/client` | the API client, its errors, kubeconfig loading, YAML |
 * | `@kubeno/kubeno/runtime` | the map of the runtime's entries below; the clock and logging |
 * | `@kubeno/kubeno/runtime/watch`, `/cache`, `/queue`, `/controller`, `/manager` | one entry per runtime concept: watch, store and informers, work queue, controller runner, manager with leader election and health |
 * | `@kubeno/kubeno/runtime/unstable-sharding` | sharding among replicas (rests on the alpha KEP-5866 sharded list and watch) |
 * | `@kubeno/kubeno/webhook` | admission webhooks: server, certificates, registration, manifests |
 * | `@kubeno/kubeno/metrics` | the Prometheus registry and the controller-runtime metric families |
 * | `@kubeno/kubeno/operator` | the operator program's manifests, RBAC and option types |
 * | `@kubeno/kubeno/testing` | a real control plane for tests, a fault proxy, a fake clock |
 * | `@kubeno/kubeno/cli` | kubeno's own tool: `init`, `create resource`, `compile` |
 *
 * @example A custom resource and its controller
 * ```ts
 * import { ConfigMap, defineResource, reconcile, z } from "./mod.ts";
 *
 * const Greeting = defineResource({
 *   group: "example.com", version: "v1", kind: "Greeting",
 *   spec: z.object({ text: z.string() }),
 * });
 * const controller = reconcile(Greeting, {
 *   owns: [ConfigMap],
 *   async reconcile(greeting, ctx) {
 *     await ctx.apply(ConfigMap, {
 *       metadata: { name: greeting.metadata.name!, namespace: greeting.metadata.namespace },
 *       data: { text: greeting.spec.text },
 *     });
 *   },
 * });
 * if (controller.name !== "greeting" || Greeting.plural !== "greetings") throw new Error();
 * ```
 *
 * @module
 */

// Describe resources
export {
  type CustomResource,
  defineResource,
  type DefineResourceOptions,
} from "./src/schema/define_resource.ts";
export { type ObjectOf, type Resource, resource } from "./src/core/resource.ts";
export { metadataOnly } from "./src/core/metadata_only.ts";
export { cel, listMap, listType, mapType } from "./src/schema/schema.ts";
export { conditionSchema, conditionsSchema } from "./src/schema/condition.ts";
export { z } from "./src/util/z.ts";

// Objects
export type {
  Condition,
  KubeObject,
  ObjectMeta,
  ObjectRef,
  OwnerReference,
} from "./src/core/object.ts";

// Built-in kinds (every other one is in `@kubeno/kubeno/core`)
export {
  ConfigMap,
  Event,
  Namespace,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from "./src/core/kinds.ts";
export { DaemonSet, Deployment, Job, StatefulSet } from "./src/core/kinds_workloads.ts";
export { Ingress } from "./src/core/api/networking/v1.ts";

// Controllers
export {
  type Controller,
  reconcile,
  type ReconcileContext,
  type ReconcileOptions,
  type ReconcileResult,
  requeue,
  TerminalError,
} from "./src/runtime/controller/reconcile.ts";
export {
  and,
  deletionStarted,
  generationChanged,
  labelsChanged,
  not,
  or,
  type Predicate,
} from "./src/runtime/controller/predicates.ts";
export {
  type ConditionInput,
  findCondition,
  isFalse,
  isTrue,
  setCondition,
} from "./src/core/conditions.ts";
export { controllerOf, setControllerReference } from "./src/core/owner.ts";

// Dependents: the children a primary declares, applied, pruned and judged ready in order
// (their types and options are in `@kubeno/kubeno/runtime/dependents`)
export { dependents } from "./src/runtime/dependents/dependents.ts";

// Admission webhooks
export { admission, AdmissionDenied, type AdmissionOptions } from "./src/webhook/admission.ts";

// The operator program
export { type Operator, operator } from "./src/operator/operator.ts";
export type { OperatorOptions } from "./src/operator/command/options.ts";

// Talking to the API server
export { type Client, createClient } from "./src/client/client.ts";
export type { ApplyObject } from "./src/client/types.ts";
export { ApiError, isConflict, isNotFound } from "./src/client/errors/api_error.ts";
export { fromYaml, toYaml } from "./src/util/yaml.ts";

// Errors: every error kubeno throws on purpose extends KubenoError
export { KubenoError } from "./src/util/error.ts";
