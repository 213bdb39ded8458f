// The ReconcileContext a controller hands to reconcile/finalize: write helpers bound to the
// primary object and the controller's field manager.
import type { Logger } from "../../util/log.ts";
import type { Client } from "../../client/client.ts";
import type { ApplyObject, MergePatch } from "../../client/types.ts";
import { type ConditionInput, setCondition } from "../../core/conditions.ts";
import type { EventRecorder } from "./events.ts";
import type { Condition, KubeObject, ObjectRef } from "../../core/object.ts";
import { setControllerReference } from "../../core/owner.ts";
import type { Controller, ReconcileContext, StatusOf } from "./reconcile.ts";
import type { Resource } from "../../core/resource.ts";
import type { CacheReader } from "../cache/reader.ts";
import { objectKey } from "../../core/object_key.ts";
import type { WriteMemory } from "./_write_memory.ts";

export interface ContextInit<T extends KubeObject> {
  controller: Controller<T>;
  client: Client;
  events: EventRecorder;
  log: Logger;
  key: string;
  /** The primary as reconcile gets it (a copy it may change). */
  primary: T;
  /** The primary as the server last showed it (the cached, frozen object). */
  cached: T;
  /** Reads from the controller's cache. */
  cache: CacheReader;
  signal: AbortSignal;
  /** The controller's own last writes, to skip writing them again. */
  memory?: WriteMemory;
  /** An owned object as the controller's cache holds it: key for `memory`, and the object. */
  owned?: (
    kind: Resource<any>,
    name: string,
    namespace: string | undefined,
  ) => { key: string; cached: KubeObject | undefined } | undefined;
}

export function reconcileContext<T extends KubeObject>(
  init: ContextInit<T>,
): ReconcileContext<T> {
  const { controller, client, key, signal } = init;
  const res = controller.resource;
  const fieldManager = controller.fieldManager;
  const m = init.primary.metadata;
  const owner: KubeObject = {
    ...init.primary,
    apiVersion: init.primary.apiVersion ?? res.apiVersion,
    kind: init.primary.kind ?? res.kind,
  };
  const ref: ObjectRef = {
    apiVersion: owner.apiVersion!,
    kind: owner.kind!,
    name: m.name!,
    ...(m.namespace ? { namespace: m.namespace } : {}),
    ...(m.uid ? { uid: m.uid } : {}),
  };
  // "Nothing changed" is judged against the server's state — the cached object, then what
  // this context's own status writes returned — never against `obj`, which the reconcile
  // may have changed before asking for the same values to be written.
  let server: T = init.cached;
  // A merge patch replaces lists whole: a list computed from an older state would drop what
  // others wrote since (a condition set by another controller). Such a patch carries the
  // resourceVersion it was computed from, so the server refuses it (409) instead, and the
  // reconcile is retried on fresh state.
  const writeStatus = async (
    obj: T,
    status: MergePatch<StatusOf<T>>,
    computedFrom: string | undefined,
  ): Promise<T> => {
    const known = objectKey(obj) === key ? server : undefined;
    if (known && isSubset(status, (known as { status?: unknown }).status)) return obj;
    // The cache may not have seen this controller's last status write yet: the same patch
    // again is that write's echo, not news.
    if (known && init.memory?.statusPending(key, status, known.metadata.resourceVersion)) {
      return obj;
    }
    const guard = computedFrom && hasList(status)
      ? { metadata: { resourceVersion: computedFrom } }
      : {};
    const out = await client.patchStatus(
      res,
      obj.metadata.name!,
      { ...guard, status } as unknown as MergePatch<T>,
      { namespace: obj.metadata.namespace, fieldManager, signal },
    );
    if (objectKey(out) === key) {
      server = out;
      init.memory?.recordStatus(key, status, out.metadata.resourceVersion);
    }
    return out;
  };
  const patchStatus = (obj: T, status: MergePatch<StatusOf<T>>): Promise<T> =>
    writeStatus(obj, status, obj.metadata.resourceVersion);
  return {
    client,
    cache: init.cache,
    log: init.log,
    events: init.events,
    controller: controller.name,
    key,
    ref,
    signal,
    async apply<U extends KubeObject>(kind: Resource<U>, obj: ApplyObject<U>): Promise<U> {
      const desired = structuredClone(obj) as ApplyObject<U>;
      desired.apiVersion ??= kind.apiVersion;
      desired.kind ??= kind.kind;
      if (kind.namespaced && !desired.metadata.namespace && m.namespace) {
        desired.metadata.namespace = m.namespace;
      }
      setControllerReference(owner, desired);
      // An owned object this controller applied just so, still holding those fields in the
      // cache: applying it again is the echo of its own write, and would change nothing.
      const owned = init.owned?.(kind, desired.metadata.name, desired.metadata.namespace);
      if (owned && init.memory?.applyUnchanged(owned.key, desired, owned.cached)) {
        return structuredClone(owned.cached) as U;
      }
      const out = await client.apply(kind, desired, { force: true, fieldManager, signal });
      if (owned) init.memory?.recordApply(owned.key, desired);
      return out;
    },
    patchStatus,
    setCondition(obj: T, condition: ConditionInput): Promise<T> {
      // From the latest state this context knows (its own earlier writes included), so that
      // consecutive calls keep each other's conditions; guarded by that state's version.
      const base = objectKey(obj) === key ? server : obj;
      const current = (base as { status?: { conditions?: Condition[] } }).status?.conditions;
      const next = setCondition(current, {
        ...condition,
        observedGeneration: condition.observedGeneration ?? obj.metadata.generation,
      });
      return writeStatus(
        obj,
        { conditions: next } as unknown as MergePatch<StatusOf<T>>,
        base.metadata.resourceVersion,
      );
    },
  };
}

/** Whether a merge patch holds a list anywhere (lists are replaced whole). */
function hasList(patch: unknown): boolean {
  if (Array.isArray(patch)) return true;
  if (typeof patch !== "object" || patch === null) return false;
  return Object.values(patch).some(hasList);
}

/** Whether applying merge patch `patch` to `target` would change nothing. */
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
