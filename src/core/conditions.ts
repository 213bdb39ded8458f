/**
 * Status conditions with `metav1.Condition` semantics, as apimachinery's
 * `meta.SetStatusCondition`: one entry per type, and `lastTransitionTime` moves only when
 * the status changes. The helpers never mutate their input.
 *
 * @module
 */
import type { Condition } from "./object.ts";

/** What {@linkcode setCondition} takes: a condition without its transition time. */
export interface ConditionInput {
  /** Condition type in CamelCase, e.g. `Ready`. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: Condition["status"];
  /** Machine-readable CamelCase reason, e.g. `DeploymentAvailable`. */
  reason: string;
  /**
   * Human-readable message.
   * @default ""
   */
  message?: string;
  /** The `metadata.generation` the condition was computed from. */
  observedGeneration?: number;
}

/** Options of {@linkcode setCondition}. */
export interface SetConditionOptions {
  /**
   * The time recorded as `lastTransitionTime` when the status changes.
   * @default new Date()
   */
  now?: Date;
}

/**
 * Returns `conditions` with `condition` set: a new entry is appended; an existing entry of
 * the same type gets the new status, reason, message and observedGeneration, and a new
 * `lastTransitionTime` only if its status changed.
 *
 * @param conditions The current conditions, e.g. `obj.status?.conditions`.
 * @param condition The condition to set.
 * @param options The current time.
 * @returns A new array; `conditions` is not changed.
 * @throws {TypeError} When `type` or `reason` is empty, or `status` is not `True`, `False`
 * or `Unknown`.
 *
 * @example Transition time only moves when the status changes
 * ```ts
 * import { setCondition } from "./conditions.ts";
 * const t0 = new Date("2025-01-01T00:00:00Z");
 * const a = setCondition([], { type: "Ready", status: "False", reason: "Starting" }, { now: t0 });
 * const b = setCondition(a, { type: "Ready", status: "False", reason: "Waiting", message: "2/3" });
 * if (b[0].lastTransitionTime !== "2025-01-01T00:00:00Z" || b[0].reason !== "Waiting") {
 *   throw new Error();
 * }
 * const c = setCondition(b, { type: "Ready", status: "True", reason: "Available" });
 * if (c[0].lastTransitionTime === b[0].lastTransitionTime) throw new Error();
 * ```
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  condition: ConditionInput,
  options?: SetConditionOptions,
): Condition[] {
  const { type, status, reason } = condition;
  if (!type) throw new TypeError("Cannot set condition: type is empty");
  if (status !== "True" && status !== "False" && status !== "Unknown") {
    throw new TypeError(
      `Cannot set condition "${type}": status must be "True", "False" or "Unknown", got "${status}"`,
    );
  }
  if (!reason) throw new TypeError(`Cannot set condition "${type}": reason is empty`);
  const list = conditions ?? [];
  const i = list.findIndex((c) => c.type === type);
  const existing = i >= 0 ? list[i] : undefined;
  const next: Condition = {
    type,
    status,
    ...(condition.observedGeneration !== undefined
      ? { observedGeneration: condition.observedGeneration }
      : {}),
    lastTransitionTime: existing && existing.status === status && existing.lastTransitionTime
      ? existing.lastTransitionTime
      : rfc3339(options?.now ?? new Date()),
    reason,
    message: condition.message ?? "",
  };
  if (i < 0) return [...list, next];
  const out = [...list];
  out[i] = next;
  return out;
}

/**
 * The condition of a type.
 *
 * @param conditions The conditions, e.g. `obj.status?.conditions`.
 * @param type The condition type.
 * @returns The condition, or `undefined`.
 *
 * @example Reading a condition
 * ```ts
 * import { findCondition } from "./conditions.ts";
 * const ready = findCondition([{ type: "Ready", status: "True", reason: "Ok", message: "",
 *   lastTransitionTime: "2025-01-01T00:00:00Z" }], "Ready");
 * if (ready?.reason !== "Ok") throw new Error();
 * ```
 */
export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * Whether the condition of a type has status `True`.
 *
 * @param conditions The conditions.
 * @param type The condition type.
 * @returns `true` only when the condition exists and is `True`.
 *
 * @example Is it ready?
 * ```ts
 * import { isTrue, setCondition } from "./conditions.ts";
 * const conditions = setCondition([], { type: "Ready", status: "True", reason: "Ok" });
 * if (!isTrue(conditions, "Ready") || isTrue(conditions, "Degraded")) throw new Error();
 * ```
 */
export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === "True";
}

/**
 * Whether the condition of a type has status `False`.
 *
 * @param conditions The conditions.
 * @param type The condition type.
 * @returns `true` only when the condition exists and is `False`.
 *
 * @example Unknown is neither true nor false
 * ```ts
 * import { isFalse, setCondition } from "./conditions.ts";
 * const conditions = setCondition([], { type: "Ready", status: "Unknown", reason: "Starting" });
 * if (isFalse(conditions, "Ready")) throw new Error();
 * ```
 */
export function isFalse(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === "False";
}

// metav1.Time serialises with second precision.
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}
