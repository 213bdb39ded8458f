/**
 * `ctx.patchStatus`: writes of the status subresource, judged against the newest state of the
 * primary the context knows, skipped when they would change nothing or are the controller's own
 * last write coming back, and guarded by a resourceVersion when they replace a list.
 * `ctx.setCondition` (`conditions.ts`) writes through here too.
 *
 * @module
 */
import type { MergePatch } from "../../../client/types.ts";
import type { KubeObject } from "../../../core/object.ts";
import { objectKey } from "../../../core/object_key.ts";
import type { Client } from "../../../client/client.ts";
import type { StatusOf } from "../reconcile.ts";
import { newest, type Sender } from "./send.ts";
import type { WriteMemory } from "./tracking.ts";

/** What the status writes of one reconcile are made with. */
export interface StatusInit<T extends KubeObject> {
  readonly client: Client;
  /** The primary's key. */
  readonly key: string;
  /** The primary kind's field manager. */
  readonly fieldManager: string;
  readonly signal: AbortSignal;
  readonly memory?: WriteMemory;
  /** The context's door for writes, and the newest state of the primary it knows. */
  readonly sender: Sender<T>;
}

/**
 * `ctx.patchStatus` of one reconcile: for the primary, guarded by the newer of `obj`'s
 * resourceVersion and that of the newest state this context knows.
 *
 * @param init The client, the primary's key and the context's door for writes.
 * @param obj The object whose status is patched.
 * @param status The status merge patch.
 * @returns The server's answer, or `obj` when the patch would change nothing.
 */
export function patchStatus<T extends KubeObject>(
  init: StatusInit<T>,
  obj: T,
  status: MergePatch<StatusOf<T>>,
): Promise<T> {
  const { key, sender } = init;
  return writeStatus(
    init,
    obj,
    status,
    objectKey(obj) === key
      ? newest(obj.metadata.resourceVersion, sender.latest.metadata.resourceVersion)
      : obj.metadata.resourceVersion,
  );
}

/**
 * One status write. A merge patch replaces lists whole: a list computed from an older state
 * would drop what others wrote since (a condition set by another controller). Such a patch
 * carries the resourceVersion it was computed from, so the server refuses it (409) instead,
 * and the reconcile is retried on fresh state.
 *
 * @param init The client, the primary's key and the context's door for writes.
 * @param obj The object whose status is written.
 * @param status The status merge patch.
 * @param computedFrom The resourceVersion the patch was computed from, sent as a
 * precondition when the patch holds a list.
 * @returns The server's answer, or `obj` when the write would change nothing.
 */
export async function writeStatus<T extends KubeObject>(
  init: StatusInit<T>,
  obj: T,
  status: MergePatch<StatusOf<T>>,
  computedFrom: string | undefined,
): Promise<T> {
  const { client, key, sender, memory, fieldManager, signal } = init;
  const mine = objectKey(obj) === key;
  const server = mine ? sender.latest : undefined;
  if (server && isSubset(status, (server as { status?: unknown }).status)) return obj;
  // The cache may not have seen this controller's last status write yet: the same patch
  // again is that write's echo, not news.
  if (server && memory?.statusPending(key, status, server.metadata.resourceVersion)) {
    return obj;
  }
  const guard = computedFrom && hasList(status)
    ? { metadata: { resourceVersion: computedFrom } }
    : {};
  const res = sender.resource;
  const target = { name: obj.metadata.name!, namespace: obj.metadata.namespace };
  const out = await sender.send(res, "write", target, () =>
    client.patchStatus(
      res,
      target.name,
      { ...guard, status } as unknown as MergePatch<T>,
      { namespace: target.namespace, fieldManager, signal },
    ), { status });
  if (mine) memory?.recordStatus(key, status, out.metadata.resourceVersion);
  return out;
}

/**
 * Whether a merge patch holds a list anywhere (lists are replaced whole).
 *
 * @param patch The merge patch.
 * @returns `true` when it does.
 */
export function hasList(patch: unknown): boolean {
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
