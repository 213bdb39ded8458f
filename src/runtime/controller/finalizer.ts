/**
 * Finalizers: keep an object from disappearing until the controller has cleaned up after
 * it. `reconcile()` uses this when given a `finalizer`; {@linkcode finalizer} is the same
 * logic as a standalone helper, like kube-rs's `finalizer()`.
 *
 * ## Flow
 *
 * - Not being deleted, finalizer missing: add it, then `apply`.
 * - Not being deleted, finalizer present: `apply`.
 * - Being deleted (`deletionTimestamp` set), finalizer present: `cleanup`, then remove it.
 * - Being deleted, finalizer already gone: nothing.
 *
 * ## Guarantees
 *
 * The finalizer is on the object before `apply` runs, and is removed only after `cleanup`
 * resolved. Both writes are merge patches carrying the object's `resourceVersion`, so
 * they fail with 409 Conflict instead of overwriting a finalizer list that changed since
 * the object was read; retry with a fresh object.
 *
 * ## Caveats
 *
 * `cleanup` may run more than once (the removal can fail after it succeeded): make it
 * idempotent.
 *
 * @module
 */
import type { Client } from "../../client/client.ts";
import type { MergePatch } from "../../client/types.ts";
import { isNotFound } from "../../client/errors/api_error.ts";
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { inSpan } from "../../util/trace.ts";

/** What {@linkcode finalizerAction} decides for an object. */
export type FinalizerAction = "add" | "apply" | "cleanup" | "none";

/** What {@linkcode finalizer}'s handler is asked to do. */
export type FinalizerEvent<T> =
  | { readonly type: "apply"; readonly object: T }
  | { readonly type: "cleanup"; readonly object: T };

/** Options of {@linkcode finalizer}. */
export interface FinalizerOptions<R, T extends KubeObject = KubeObject> {
  /**
   * Field manager of the finalizer writes.
   * @default the client's field manager
   */
  fieldManager?: string;
  /** Cancels the finalizer writes. */
  signal?: AbortSignal;
  /**
   * Given cleanup's result, whether to keep the finalizer (cleanup is not finished yet).
   * @default keep it when the result is `requeue(ms)`
   */
  keep?: (result: R) => boolean;
  /**
   * Sends a finalizer patch, given how to compute it from the newest state of the object:
   * e.g. a reconcile context's, whose own writes in `handler` must not leave the removal
   * guarded by a stale `resourceVersion`.
   * @default a merge patch computed from `obj`, sent through `client`
   */
  write?: (patch: (latest: T) => MergePatch<T>) => Promise<T>;
}

/**
 * Whether the object's `metadata.finalizers` holds `name`.
 *
 * @param obj The object.
 * @param name The finalizer.
 * @returns `true` when present.
 *
 * @example Checking a finalizer
 * ```ts
 * import { hasFinalizer } from "./finalizer.ts";
 * if (!hasFinalizer({ metadata: { finalizers: ["a.io/x"] } }, "a.io/x")) throw new Error();
 * ```
 */
export function hasFinalizer(obj: KubeObject, name: string): boolean {
  return obj.metadata.finalizers?.includes(name) ?? false;
}

/**
 * What the finalizer logic does with `obj` (see the module's Flow).
 *
 * @param obj The object as last read.
 * @param name The finalizer.
 * @returns `add`, `apply`, `cleanup` or `none`.
 *
 * @example Deciding
 * ```ts
 * import { finalizerAction } from "./finalizer.ts";
 * const f = "a.io/x";
 * if (finalizerAction({ metadata: {} }, f) !== "add") throw new Error();
 * const deleting = { metadata: { finalizers: [f], deletionTimestamp: "2025-01-01T00:00:00Z" } };
 * if (finalizerAction(deleting, f) !== "cleanup") throw new Error();
 * ```
 */
export function finalizerAction(obj: KubeObject, name: string): FinalizerAction {
  const present = hasFinalizer(obj, name);
  if (obj.metadata.deletionTimestamp) return present ? "cleanup" : "none";
  return present ? "apply" : "add";
}

/**
 * The merge patch that adds `name` to the object's finalizers, guarded by its
 * resourceVersion.
 *
 * @param obj The object as last read.
 * @param name The finalizer.
 * @returns The patch.
 *
 * @example The patch
 * ```ts
 * import { addFinalizerPatch } from "./finalizer.ts";
 * const p = addFinalizerPatch({ metadata: { resourceVersion: "5", finalizers: ["o.io/y"] } }, "a.io/x");
 * if (JSON.stringify(p) !== '{"metadata":{"finalizers":["o.io/y","a.io/x"],"resourceVersion":"5"}}') {
 *   throw new Error();
 * }
 * ```
 */
export function addFinalizerPatch(obj: KubeObject, name: string): MergePatch<KubeObject> {
  const finalizers = [...(obj.metadata.finalizers ?? []).filter((f) => f !== name), name];
  return { metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion } };
}

/**
 * The merge patch that removes `name` from the object's finalizers, guarded by its
 * resourceVersion.
 *
 * @param obj The object as last read.
 * @param name The finalizer.
 * @returns The patch.
 *
 * @example The patch
 * ```ts
 * import { removeFinalizerPatch } from "./finalizer.ts";
 * const p = removeFinalizerPatch({ metadata: { resourceVersion: "6", finalizers: ["a.io/x"] } }, "a.io/x");
 * if (JSON.stringify(p) !== '{"metadata":{"finalizers":null,"resourceVersion":"6"}}') throw new Error();
 * ```
 */
export function removeFinalizerPatch(obj: KubeObject, name: string): MergePatch<KubeObject> {
  const rest = (obj.metadata.finalizers ?? []).filter((f) => f !== name);
  return {
    metadata: {
      finalizers: rest.length ? rest : null,
      resourceVersion: obj.metadata.resourceVersion,
    },
  };
}

/**
 * Runs `handler` under a finalizer: adds the finalizer before `apply`, and removes it after
 * `cleanup` (see the module docs). Usable without `reconcile()`.
 *
 * @typeParam T The object type.
 * @typeParam R The handler's result.
 * @param client The client to patch with.
 * @param resource The object's kind.
 * @param name The finalizer, e.g. `apps.kubeno.dev/cleanup`.
 * @param obj The object as last read.
 * @param handler Called with `{ type: "apply" }` or `{ type: "cleanup" }` and the object
 * (after the finalizer was added, when it was).
 * @param options Field manager, signal, and when to keep the finalizer after cleanup.
 * @returns The handler's result, or `undefined` when there was nothing to do.
 * @throws {ApiError} When a finalizer patch fails, e.g. `isConflict(err)` when the object
 * changed since it was read.
 * @throws Whatever `handler` throws; the finalizer then stays.
 *
 * @example In a hand-written reconcile loop
 * ```ts ignore — needs a live API server
 * import { finalizer } from "./finalizer.ts";
 * import { createClient } from "../../client/client.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 *
 * using client = await createClient();
 * const cm = await client.get(ConfigMap, "settings", { namespace: "default" });
 * await finalizer(client, ConfigMap, "example.com/audit", cm, async (event) => {
 *   if (event.type === "apply") console.log("configured", event.object.data);
 *   else console.log("cleaning up after", event.object.metadata.name);
 * });
 * ```
 */
export async function finalizer<T extends KubeObject, R>(
  client: Client,
  resource: Resource<T>,
  name: string,
  obj: T,
  handler: (event: FinalizerEvent<T>) => R | Promise<R>,
  options: FinalizerOptions<R, T> = {},
): Promise<R | undefined> {
  const patchOptions = {
    namespace: obj.metadata.namespace,
    fieldManager: options.fieldManager,
    signal: options.signal,
  };
  const objName = obj.metadata.name ?? "";
  const write = options.write ??
    ((patch: (latest: T) => MergePatch<T>) =>
      client.patch(resource, objName, patch(obj), patchOptions));
  switch (finalizerAction(obj, name)) {
    case "none":
      return undefined;
    case "add": {
      const updated = await inSpan(
        "finalizer add",
        { "kubeno.finalizer": name },
        () => write((latest) => addFinalizerPatch(latest, name) as MergePatch<T>),
      );
      return await handler({ type: "apply", object: updated });
    }
    case "apply":
      return await handler({ type: "apply", object: obj });
    case "cleanup":
      // The cleanup, its writes and the finalizer's removal, in one span.
      return await inSpan("finalize", { "kubeno.finalizer": name }, async (span) => {
        const result = await handler({ type: "cleanup", object: obj });
        const keep = options.keep ?? isRequeue;
        const kept = keep(result);
        span.set({ "kubeno.finalizer.kept": kept });
        if (kept) return result;
        try {
          await write((latest) => removeFinalizerPatch(latest, name) as MergePatch<T>);
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
        return result;
      });
  }
}

function isRequeue(result: unknown): boolean {
  return typeof result === "object" && result !== null && "requeueAfterMs" in result;
}
