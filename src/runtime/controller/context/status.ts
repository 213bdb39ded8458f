/**
 * `ctx.patchStatus` and `ctx.setCondition`: writes of the status subresource, judged against
 * the newest state of the primary the context knows, skipped when they would change nothing or
 * are the controller's own last write coming back, and guarded by a resourceVersion when they
 * replace a list.
 *
 * @module
 */
import type { MergePatch } from "../../../client/types.ts";
import { type ConditionInput, setCondition } from "../../../core/conditions.ts";
import type { Condition, KubeObject } from "../../../core/object.ts";
import { objectKey } from "../../../core/object_key.ts";
import type { Client } from "../../../client/client.ts";
import type { StatusOf } from "../reconcile.ts";
import type { WriteMemory } from "./tracking.ts";
import { type ContextWrites, newest } from "./writes.ts";

/** What the status writes of one reconcile are made with. */
export interface StatusInit<T extends KubeObject> {
  readonly client: Client;
  /** The primary's key. */
  readonly key: string;
  /** The primary kind's field manager. */
  readonly fieldManager: string;
  readonly signal: AbortSignal;
  readonly memory?: WriteMemory;
  /** The context's writes, and the newest state of the primary they know. */
  readonly writes: ContextWrites<T>;
}

/**
 * The status writes of one reconcile.
 *
 * @param init The client, the primary's key and the context's writes.
 * @returns `patchStatus` and `setCondition` as the context gives them.
 */
export function statusWrites<T extends KubeObject>(init: StatusInit<T>): {
  patchStatus(obj: T, status: MergePatch<StatusOf<T>>): Promise<T>;
  setCondition(obj: T, condition: ConditionInput): Promise<T>;
} {
  const { key, writes } = init;
  return {
    patchStatus: (obj, status) =>
      writeStatus(
        init,
        obj,
        status,
        objectKey(obj) === key
          ? newest(obj.metadata.resourceVersion, writes.latest.metadata.resourceVersion)
          : obj.metadata.resourceVersion,
      ),
    setCondition(obj, condition) {
      // From the latest state this context knows (its own earlier writes included), so that
      // consecutive calls keep each other's conditions; guarded by that state's version.
      const base = objectKey(obj) === key ? writes.latest : obj;
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
    },
  };
}

/**
 * One status write. A merge patch replaces lists whole: a list computed from an older state
 * would drop what others wrote since (a condition set by another controller). Such a patch
 * carries the resourceVersion it was computed from, so the server refuses it (409) instead,
 * and the reconcile is retried on fresh state.
 */
async function writeStatus<T extends KubeObject>(
  init: StatusInit<T>,
  obj: T,
  status: MergePatch<StatusOf<T>>,
  computedFrom: string | undefined,
): Promise<T> {
  const { client, key, writes, memory, fieldManager, signal } = init;
  const mine = objectKey(obj) === key;
  const server = mine ? writes.latest : undefined;
  if (server && isSubset(status, (server as { status?: unknown }).status)) return obj;
  // The cache may not have seen this controller's last status write yet: the same patch
  // again is that write's echo, not news.
  if (server && memory?.statusPending(key, status, server.metadata.resourceVersion)) {
    return obj;
  }
  const guard = computedFrom && hasList(status)
    ? { metadata: { resourceVersion: computedFrom } }
    : {};
  const res = init.writes.resource;
  const target = { name: obj.metadata.name!, namespace: obj.metadata.namespace };
  const out = await writes.send(res, "write", target, () =>
    client.patchStatus(
      res,
      target.name,
      { ...guard, status } as unknown as MergePatch<T>,
      { namespace: target.namespace, fieldManager, signal },
    ), { status });
  if (mine) memory?.recordStatus(key, status, out.metadata.resourceVersion);
  return out;
}

/** Whether a merge patch holds a list anywhere (lists are replaced whole). */
function hasList(patch: unknown): boolean {
  if (Array.isArray(patch)) return true;
  if (typeof patch !== "object" || patch === null) return false;
  return Object.values(patch).some(hasList);
}

/**
 * Whether applying merge patch `patch` to `target` would change nothing.
 *
 * @param patch The merge patch.
 * @param target The object (or part of it) it would apply to.
 * @returns `true` when it would change nothing.
 */
export function isSubset(patch: unknown, target: unknown): boolean {
  if (patch === null) return target === undefined || target === null;
  if (typeof patch !== "object" || Array.isArray(patch)) return deepEqual(patch, target);
  if (typeof target !== "object" || target === null || Array.isArray(target)) return false;
  const t = target as Record<string, unknown>;
  return Object.entries(patch as Record<string, unknown>).every(([k, v]) =>
    v === undefined || isSubset(v, t[k])
  );
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ak = Object.keys(a);
  const bk = Object.keys(b);
  if (ak.length !== bk.length) return false;
  return ak.every((k) =>
    deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])
  );
}
