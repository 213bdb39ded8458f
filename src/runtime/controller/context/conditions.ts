/**
 * `ctx.setCondition`: one condition set with `metav1.Condition` semantics. On the primary it is
 * merged into the reconcile's pending status (`status_buffer.ts`), written once; on another
 * object it is written at once as a status patch (`status.ts`).
 *
 * @module
 */
import type { MergePatch } from "../../../client/types.ts";
import { type ConditionInput, setCondition } from "../../../core/conditions.ts";
import type { Condition, KubeObject } from "../../../core/object.ts";
import type { StatusOf } from "../reconcile.ts";
import { type StatusInit, writeStatus } from "./status.ts";

/**
 * The conditions `current` becomes with `condition` set.
 *
 * @param current The conditions now.
 * @param obj The object they are of: `observedGeneration` defaults to its generation.
 * @param condition The condition.
 * @returns The new list.
 */
export function conditionsWith(
  current: readonly Condition[] | undefined,
  obj: KubeObject,
  condition: ConditionInput,
): Condition[] {
  return setCondition(current, {
    ...condition,
    observedGeneration: condition.observedGeneration ?? obj.metadata.generation,
  });
}

/**
 * `ctx.setCondition` of an object other than the primary, written at once.
 *
 * @param init The client, the primary's key and the context's door for writes.
 * @param obj The object whose condition is set.
 * @param condition The condition; `observedGeneration` defaults to `obj`'s generation.
 * @returns The server's answer, or `obj` when the condition is already so.
 */
export function writeCondition<T extends KubeObject>(
  init: StatusInit<T>,
  obj: T,
  condition: ConditionInput,
): Promise<T> {
  const current = (obj as { status?: { conditions?: Condition[] } }).status?.conditions;
  return writeStatus(
    init,
    obj,
    { conditions: conditionsWith(current, obj, condition) } as unknown as MergePatch<StatusOf<T>>,
    obj.metadata.resourceVersion,
  );
}
