/**
 * `ctx.setCondition`: one condition set with `metav1.Condition` semantics and written as a
 * status patch (`status.ts`), computed from the newest state of the primary the context knows.
 *
 * @module
 */
import type { MergePatch } from "../../../client/types.ts";
import { type ConditionInput, setCondition } from "../../../core/conditions.ts";
import type { Condition, KubeObject } from "../../../core/object.ts";
import { objectKey } from "../../../core/object_key.ts";
import type { StatusOf } from "../reconcile.ts";
import { type StatusInit, writeStatus } from "./status.ts";

/**
 * `ctx.setCondition` of one reconcile.
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
  // From the latest state this context knows (its own earlier writes included), so that
  // consecutive calls keep each other's conditions; guarded by that state's version.
  const base = objectKey(obj) === init.key ? init.sender.latest : obj;
  const current = (base as { status?: { conditions?: Condition[] } }).status?.conditions;
  const next = setCondition(current, {
    ...condition,
    observedGeneration: condition.observedGeneration ?? obj.metadata.generation,
  });
  return writeStatus(
    init,
    obj,
    { conditions: next } as unknown as MergePatch<StatusOf<T>>,
    base.metadata.resourceVersion,
  );
}
