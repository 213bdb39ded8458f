/**
 * One status write per reconcile: what `ctx.patchStatus` and `ctx.setCondition` set on the
 * primary is merged here and written once — when the reconcile (or finalize) returns or
 * throws, or earlier at `ctx.flushStatus()` — as controller-runtime users change
 * `obj.Status` in memory and call `Status().Update` once, and as Java Operator SDK writes the
 * status `UpdateControl.patchStatus` returns. A watcher of the primary never sees the status
 * of one reconcile half written (a field beside a condition from before it).
 *
 * With `observedGeneration` (the primary's status schema has it, and `reconcile()` did not opt
 * out), a reconcile that returns adds `observedGeneration: metadata.generation` of the object
 * it read to that write, as Java Operator SDK's `ObservedGenerationAwareStatus`.
 *
 * @module
 */
import type { MergePatch } from "../../../client/types.ts";
import type { ConditionInput } from "../../../core/conditions.ts";
import type { Condition, KubeObject } from "../../../core/object.ts";
import { dataCopy } from "../../../util/freeze.ts";
import type { StatusOf } from "../reconcile.ts";
import { conditionsWith } from "./conditions.ts";
import { newest } from "./send.ts";
import { hasList, type StatusInit, writeStatus } from "./status.ts";

type Patch = Record<string, unknown>;

/**
 * The status one reconcile set on its primary, not yet written.
 *
 * @typeParam T The primary object type.
 */
export class StatusBuffer<T extends KubeObject> {
  readonly #init: StatusInit<T>;
  #pending: Patch | undefined;
  // The resourceVersion the first list in the pending patch was computed from: the write
  // carries it as a precondition, so a list another writer changed since is never dropped.
  #computedFrom: string | undefined;

  /** @param init The client, the primary's key and the context's door for writes. */
  constructor(init: StatusInit<T>) {
    this.#init = init;
  }

  /**
   * `ctx.patchStatus` of the primary: merged into the pending status.
   *
   * @param obj The primary, as the reconcile holds it.
   * @param status The status merge patch.
   * @returns `obj` with the pending status applied (no request is sent).
   */
  patch(obj: T, status: MergePatch<StatusOf<T>>): T {
    const from = newest(
      obj.metadata.resourceVersion,
      this.#init.sender.latest.metadata.resourceVersion,
    );
    this.#add(status as Patch, hasList(status) ? from : undefined);
    return this.view(obj);
  }

  /**
   * `ctx.setCondition` of the primary: the conditions computed from the pending ones, else
   * from the newest state of the primary this context knows, and merged into the pending
   * status.
   *
   * @param obj The primary, as the reconcile holds it.
   * @param condition The condition; `observedGeneration` defaults to `obj`'s generation.
   * @returns `obj` with the pending status applied (no request is sent).
   */
  setCondition(obj: T, condition: ConditionInput): T {
    const pending = this.#pending?.conditions;
    const latest = this.#init.sender.latest;
    const current = Array.isArray(pending)
      ? pending as Condition[]
      : (latest as { status?: { conditions?: Condition[] } }).status?.conditions;
    const conditions = conditionsWith(current, obj, condition);
    this.#add({ conditions }, latest.metadata.resourceVersion);
    return this.view(obj);
  }

  /**
   * `obj` as it will be once the pending status is written.
   *
   * @param obj The primary.
   * @returns A copy of `obj`, its status patched.
   */
  view(obj: T): T {
    const out = dataCopy(obj) as T & { status?: unknown };
    if (this.#pending) out.status = applyPatch(out.status, this.#pending);
    return out;
  }

  /**
   * Writes the pending status now (skipped when the server's status already holds it).
   *
   * @param over Merged over the pending status (it wins over what the reconcile set).
   * @param under Merged under it (what the reconcile set wins), e.g. `observedGeneration`.
   * @returns The primary as stored (a copy of the newest state known when nothing was sent).
   */
  async flush(over?: Patch, under?: Patch): Promise<T> {
    const patch = compose(compose(under, this.#pending), over);
    const from = this.#computedFrom;
    this.#pending = this.#computedFrom = undefined;
    const latest = this.#init.sender.latest;
    if (!patch) return dataCopy(latest);
    const out = await writeStatus(
      this.#init,
      latest,
      patch as MergePatch<StatusOf<T>>,
      from,
    );
    return out === latest ? dataCopy(latest) : out;
  }

  #add(patch: Patch, computedFrom: string | undefined): void {
    this.#pending = compose(this.#pending, patch);
    this.#computedFrom ??= computedFrom;
  }
}

function isObject(v: unknown): v is Patch {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Two merge patches as one: `b` applied after `a` (lists and scalars replace). */
function compose(a: Patch | undefined, b: Patch | undefined): Patch | undefined {
  if (!a || !b) return a ?? b;
  const out: Patch = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (v === undefined) continue;
    out[k] = isObject(v) && isObject(a[k]) ? compose(a[k] as Patch, v) : v;
  }
  return out;
}

/** RFC 7386: `patch` applied to `target`. */
function applyPatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Patch = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) delete out[k];
    else out[k] = applyPatch(out[k], v);
  }
  return out;
}
