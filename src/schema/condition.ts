/**
 * The zod schema of `metav1.Condition`, for a custom resource's `status.conditions`: what
 * kubebuilder users get from `[]metav1.Condition`, with the same validation the API server
 * applies to it (patterns, lengths, enum, `date-time`), so a CRD built with it refuses what
 * apimachinery's own types refuse.
 *
 * @module
 */
import { z, type ZodEnum, type ZodInt, type ZodOptional, type ZodString } from "../util/zod.ts";
import { listMap } from "./schema.ts";

// The markers of k8s.io/apimachinery/pkg/apis/meta/v1.Condition.
const TYPE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/;
const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** The type of {@linkcode conditionSchema}: a zod object schema whose output is a `Condition`. */
export type ConditionSchema = ReturnType<
  typeof z.object<{
    type: ZodString;
    status: ZodEnum<{ True: "True"; False: "False"; Unknown: "Unknown" }>;
    observedGeneration: ZodOptional<ZodInt>;
    lastTransitionTime: ReturnType<typeof z.iso.datetime>;
    reason: ZodString;
    message: ZodString;
  }>
>;

/**
 * One status condition, as `metav1.Condition`: `type` (CamelCase, optionally prefixed with a
 * DNS subdomain and `/`, at most 316 characters), `status` (`True`, `False` or `Unknown`),
 * `observedGeneration` (optional, `0` or more), `lastTransitionTime` (RFC 3339 in UTC, as
 * Kubernetes writes it), `reason` (CamelCase, 1 to 1024 characters) and `message` (at most
 * 32768 characters, may be empty).
 * Its output type is kubeno's `Condition`, what `setCondition` and `ctx.setCondition` write.
 *
 * @example Parsing a condition
 * ```ts
 * import { conditionSchema } from "./condition.ts";
 * const ready = conditionSchema.parse({
 *   type: "Ready",
 *   status: "True",
 *   lastTransitionTime: "2025-01-01T00:00:00Z",
 *   reason: "DeploymentAvailable",
 *   message: "3/3 replicas ready",
 * });
 * if (ready.status !== "True") throw new Error();
 * if (conditionSchema.safeParse({ ...ready, status: "Yes" }).success) throw new Error();
 * if (conditionSchema.safeParse({ ...ready, reason: "" }).success) throw new Error();
 * ```
 */
export const conditionSchema: ConditionSchema = z.object({
  type: z.string().max(316).regex(TYPE).describe(
    "Type of condition in CamelCase or in foo.example.com/CamelCase",
  ),
  status: z.enum(["True", "False", "Unknown"]).describe(
    "Status of the condition, one of True, False, Unknown",
  ),
  observedGeneration: z.int().min(0).optional().describe(
    "The .metadata.generation that the condition was set based upon",
  ),
  // Kubernetes writes metav1.Time in UTC ("Z"); this is the `format: date-time` of the CRD.
  lastTransitionTime: z.iso.datetime().describe(
    "Last time the condition transitioned from one status to another (RFC 3339)",
  ),
  reason: z.string().min(1).max(1024).regex(REASON).describe(
    "Programmatic identifier in CamelCase of the reason for the condition's last transition",
  ),
  message: z.string().max(32768).describe(
    "Human-readable message with details about the transition; may be empty",
  ),
});

/**
 * A resource's `status.conditions`: an optional list of {@linkcode conditionSchema}, one
 * entry per `type` (`x-kubernetes-list-type: map` keyed on `type`, as kubebuilder's
 * `+listType=map` / `+listMapKey=type`), so server-side apply merges conditions by type and
 * the API server refuses two entries of one type.
 *
 * @example The status of a custom resource
 * ```ts
 * import { conditionsSchema } from "./condition.ts";
 * import { defineResource } from "./define_resource.ts";
 * import { z, type ZodEnum, type ZodInt, type ZodOptional, type ZodString } from "../util/zod.ts";
 * const Memcached = defineResource({
 *   group: "cache.example.com",
 *   version: "v1alpha1",
 *   kind: "Memcached",
 *   spec: z.object({ size: z.int().min(1).max(5) }),
 *   status: z.object({ conditions: conditionsSchema }),
 * });
 * const status = Memcached.crd().spec.versions[0].schema.openAPIV3Schema.properties?.status;
 * const conditions = status?.properties?.conditions;
 * if (conditions?.["x-kubernetes-list-map-keys"]?.join() !== "type") throw new Error();
 * ```
 */
export const conditionsSchema: ZodOptional<ReturnType<typeof z.array<ConditionSchema>>> = listMap(
  z.array(conditionSchema),
  ["type"],
).optional()
  .describe("Conditions of the object's current state, one per type");
