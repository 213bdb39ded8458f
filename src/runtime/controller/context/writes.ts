/**
 * The object writes of one reconcile: `ctx.apply`, `create`, `update`, `patch`, `delete`. Each
 * is bound to the primary and the controller's field manager and sent through the context's
 * {@linkcode Sender} (refused once the signal aborted, tracked for the write gate); `ctx.apply`
 * also skips the controller's own last apply while the cache still holds it so (write memory).
 *
 * @module
 */
import { isNotFound } from "../../../client/errors/api_error.ts";
import type { ApplyObject, MergePatch } from "../../../client/types.ts";
import type { KubeObject } from "../../../core/object.ts";
import type { Resource } from "../../../core/resource.ts";
import { dataCopy } from "../../../util/freeze.ts";
import type { ContextDeleteOptions, ContextWriteOptions } from "../reconcile.ts";
import { newest, type Sender, type WritesInit } from "./send.ts";

/**
 * The object writes of one reconcile — `ctx.apply`, `create`, `update`, `patch`, `delete` —
 * each sent through the context's {@linkcode Sender} (announced, tracked, refused once the
 * signal aborted) with the controller's field manager.
 *
 * @typeParam T The primary object type.
 */
export class ObjectWrites<T extends KubeObject> {
  readonly #sender: Sender<T>;
  readonly #init: WritesInit<T>;

  /**
   * @param sender The context's door for writes.
   * @param init What they are made with.
   */
  constructor(sender: Sender<T>, init: WritesInit<T>) {
    this.#sender = sender;
    this.#init = init;
  }

  /**
   * `ctx.apply`: server-side apply of an owned object, skipped when it is the controller's
   * own last apply and the cache still holds it so.
   *
   * @param kind The kind.
   * @param obj The desired object.
   * @returns The object as the server (or, skipped, the cache) holds it.
   */
  async apply<U extends KubeObject>(kind: Resource<U>, obj: ApplyObject<U>): Promise<U> {
    const { client, controller, signal, memory } = this.#init;
    const desired = this.#sender.ownedCopy(kind, obj);
    const { name, namespace } = desired.metadata;
    // An owned object this controller applied just so, still holding those fields in the
    // cache: applying it again is the echo of its own write, and would change nothing.
    const mine = this.#init.owned?.(kind, name, namespace);
    if (mine && memory?.applyUnchanged(mine.key, desired, mine.cached)) {
      return dataCopy(mine.cached) as U;
    }
    const fieldManager = controller.fieldManager;
    const out = await this.#sender.send(
      kind,
      "write",
      { name, namespace },
      () => client.apply(kind, desired, { force: true, fieldManager, signal }),
      desired,
    );
    if (mine) memory?.recordApply(mine.key, desired);
    return out;
  }

  /**
   * `ctx.create`.
   *
   * @param kind The kind.
   * @param obj The object, owned by the primary.
   * @returns The created object.
   */
  create<U extends KubeObject>(kind: Resource<U>, obj: U): Promise<U> {
    const { client, controller, signal } = this.#init;
    const desired = this.#sender.ownedCopy(kind, obj);
    const target = { name: desired.metadata.name ?? "", namespace: desired.metadata.namespace };
    const fieldManager = controller.fieldManager;
    return this.#sender.send(
      kind,
      "create",
      target,
      () => client.create(kind, desired, { fieldManager, signal }),
    );
  }

  /**
   * `ctx.update`: a replace, of the primary at the newest version this context knows.
   *
   * @param kind The kind.
   * @param obj The whole object.
   * @returns The server's answer.
   */
  update<U extends KubeObject>(kind: Resource<U>, obj: U): Promise<U> {
    const { client, controller, signal } = this.#init;
    const target = this.#sender.targetOf(kind, obj, undefined);
    const body = dataCopy(obj);
    if (kind.namespaced) body.metadata.namespace = target.namespace;
    // The primary as the reconcile holds it may be older than this context's own last
    // write of it: that write's version, never a stale one.
    if (this.#sender.isPrimary(kind, obj)) {
      body.metadata.resourceVersion = newest(
        obj.metadata.resourceVersion,
        this.#sender.latest.metadata.resourceVersion,
      );
    }
    const fieldManager = controller.fieldManager;
    return this.#sender.send(
      kind,
      "write",
      target,
      () => client.replace(kind, body, { fieldManager, signal }),
    );
  }

  /**
   * `ctx.patch`: a merge patch.
   *
   * @param kind The kind.
   * @param target The object or its name.
   * @param patch The merge patch.
   * @param options Its namespace.
   * @returns The server's answer.
   */
  patch<U extends KubeObject>(
    kind: Resource<U>,
    target: string | U,
    patch: MergePatch<U>,
    options?: ContextWriteOptions,
  ): Promise<U> {
    const { client, controller, signal } = this.#init;
    const t = this.#sender.targetOf(kind, target, options);
    const fieldManager = controller.fieldManager;
    return this.#sender.send(
      kind,
      "write",
      t,
      () => client.patch(kind, t.name, patch, { namespace: t.namespace, fieldManager, signal }),
      patch,
    );
  }

  /**
   * `ctx.delete`: gone already is done.
   *
   * @param kind The kind.
   * @param target The object or its name.
   * @param options Its namespace and propagation policy.
   */
  async delete<U extends KubeObject>(
    kind: Resource<U>,
    target: string | U,
    options?: ContextDeleteOptions,
  ): Promise<void> {
    const { client, signal } = this.#init;
    const t = {
      ...this.#sender.targetOf(kind, target, options),
      uid: typeof target === "string" ? undefined : target.metadata.uid,
    };
    try {
      await this.#sender.send(kind, "delete", t, () =>
        client.delete(kind, t.name, {
          namespace: t.namespace,
          propagationPolicy: options?.propagationPolicy ?? "Background",
          signal,
        }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
