// A dependent's declaration and its outcome in a reconcile: the types the graph
// (`dependents.ts`) and its workflow (`_workflow.ts`) share.
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import type { ApplyObject } from "../../client/types.ts";
import type { ConditionInput } from "../../core/conditions.ts";
import type { CacheReader } from "../cache/reader.ts";
import type { DependentKinds, ReconcileContext, ReconcileResult } from "../controller/reconcile.ts";
import { KubenoError } from "../../util/error.ts";

/**
 * One dependent: a kind and how its object follows from the primary.
 *
 * @typeParam P The primary object type.
 * @typeParam U The dependent's object type.
 */
export interface Dependent<P extends KubeObject, U extends KubeObject> {
  /** The dependent's kind. */
  readonly resource: Resource<U>;
  /**
   * The fields this controller owns of the dependent, `metadata.name` set (the namespace
   * defaults to the primary's), or `undefined` when it should not exist (it is then pruned).
   * It may be async (a hash with `crypto.subtle`, say) and is called once per reconcile,
   * after every dependent in its `dependsOn` has been applied or found waiting, so that
   * `ctx.dependents` holds their objects (Java Operator SDK's `desired(primary, context)`).
   * It must be a function of what it reads: the same inputs give the same object, so that the
   * steady state writes nothing.
   *
   * @param primary The primary, as the reconcile received it.
   * @param ctx Cached reads and the objects of the dependents this one depends on.
   * @returns The object to apply, or `undefined`.
   */
  desired(
    primary: P,
    ctx: DesiredContext,
  ): ApplyObject<U> | undefined | Promise<ApplyObject<U> | undefined>;
  /**
   * Names of dependents that must be applied and ready before this one is applied; when one
   * of them is absent, this one is absent too (Java Operator SDK's `dependsOn`).
   * @default []
   */
  readonly dependsOn?: readonly string[];
  /**
   * Whether the applied object is ready, so that the dependents depending on it go ahead
   * (Java Operator SDK's ready postcondition).
   *
   * @param obj The object as stored.
   * @param cache The controller's cache.
   * @returns Whether it is ready.
   * @default Deployment, StatefulSet, ReplicaSet, DaemonSet: replicas updated and ready; Job:
   * complete; Pod: Ready; PersistentVolumeClaim: Bound; Service with a selector: an
   * EndpointSlice with a ready endpoint; anything else: ready once applied
   */
  ready?(obj: U, cache: CacheReader): boolean;
  /**
   * Whether the dependent should exist at all (Java Operator SDK's reconcile precondition);
   * false makes it absent, as `desired` returning `undefined` does.
   *
   * @param primary The primary.
   * @param cache The controller's cache.
   * @returns Whether the dependent should exist.
   * @default always
   */
  precondition?(primary: P, cache: CacheReader): boolean;
}

/**
 * What a dependent's `desired` sees besides the primary.
 *
 * @example The Deployment's template carries a hash of the ConfigMap it mounts
 * ```ts
 * import type { DesiredContext } from "./dependent.ts";
 * import type { ConfigMap } from "../../core/kinds.ts";
 * async function htmlHash(ctx: DesiredContext): Promise<string> {
 *   const config = ctx.dependents.config as ConfigMap | undefined;
 *   const bytes = new TextEncoder().encode(config?.data?.["index.html"] ?? "");
 *   const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
 *   return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
 * }
 * const ctx = {
 *   cache: {} as DesiredContext["cache"],
 *   dependents: { config: { metadata: { name: "web" }, data: { "index.html": "hi" } } },
 *   signal: new AbortController().signal,
 * };
 * if ((await htmlHash(ctx)).length !== 64) throw new Error();
 * ```
 */
export interface DesiredContext {
  /**
   * The controller's cache, as `ctx.cache` in the reconcile: the kinds it declared (`owns`,
   * `watches`, `reads`), with this reconcile's own writes shown at once.
   */
  readonly cache: CacheReader;
  /**
   * The dependents this one depends on, directly or through others, by name: each object as
   * applied in this reconcile, or as the cache holds it when it was not applied (it waits for
   * its own dependencies). A name is missing when that dependent has no object (it failed, or
   * its object does not exist yet).
   */
  readonly dependents: Readonly<Record<string, KubeObject | undefined>>;
  /** The reconcile's signal: pass it on to any request `desired` makes. */
  readonly signal: AbortSignal;
}

/**
 * Where a dependent stands after a reconcile:
 *
 * - `ready`: applied and ready;
 * - `notReady`: applied, not ready yet (the dependents depending on it wait);
 * - `waiting`: not applied, a dependent it depends on is not ready (or failed);
 * - `absent`: not desired, and none exists;
 * - `pruned`: not desired, and deleted by this reconcile;
 * - `failed`: computing, applying or pruning it failed.
 */
export type DependentState = "ready" | "notReady" | "waiting" | "absent" | "pruned" | "failed";

/**
 * A dependent's outcome in one reconcile.
 *
 * @typeParam U The dependent's object type.
 */
export interface DependentResult<U extends KubeObject = KubeObject> {
  /** The dependent's name in the graph. */
  readonly name: string;
  /** Where it stands. */
  readonly state: DependentState;
  /** The object as applied (for `ready`, `notReady`), or as the cache holds it (`waiting`). */
  readonly object?: U;
  /** For `waiting`: the dependents it waits for. */
  readonly waitsFor?: readonly string[];
  /** For `failed`: what failed. */
  readonly error?: Error;
}

/**
 * The outcome of `graph.reconcile`: every dependent's, whether all that should exist are
 * ready, a `Ready` condition summing it up and the error to throw, if any failed.
 *
 * @typeParam D The graph's dependents by name, each its object type.
 */
export interface DependentsResult<D extends Record<string, KubeObject>> {
  /** Each dependent's outcome, by name. */
  readonly dependents: { readonly [K in keyof D]: DependentResult<D[K]> };
  /** Whether every dependent that should exist is applied and ready. */
  readonly ready: boolean;
  /**
   * A `Ready` condition for the primary's status: `True` when `ready`, else `False` naming
   * the first failed dependent (reason `DependentFailed`) or the first one not ready in
   * topological order (reason `DependentNotReady`). For `ctx.setCondition(obj, condition)`.
   */
  readonly condition: ConditionInput;
  /** When a dependent failed: the error to throw, so that the reconcile is retried. */
  readonly error?: DependentsError;
}

/** Options of `graph.delete`. */
export interface DeleteDependentsOptions {
  /**
   * How each member is deleted: `Foreground` waits for its own children (a Deployment's
   * pods) before it counts as gone, so that what they mount is deleted after them.
   * @default "Foreground"
   */
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  /**
   * While members remain, the reconcile is run again after this long at the latest; their
   * deletion events run it sooner.
   * @default 10_000
   */
  recheckMs?: number;
}

/**
 * A graph of dependents made by {@linkcode dependents}. Name it in `reconcile(primary, {
 * owns: [graph] })` so that its kinds are owned.
 *
 * @typeParam P The primary object type.
 * @typeParam D The dependents by name, each its object type.
 */
export interface Dependents<P extends KubeObject, D extends Record<string, KubeObject>>
  extends DependentKinds {
  /** The primary kind. */
  readonly resource: Resource<P>;
  /** The dependents' names in topological order (dependencies first). */
  readonly order: readonly (keyof D & string)[];
  /** The declarations, by name. */
  readonly specs: { readonly [K in keyof D]: Dependent<P, D[K]> };
  /**
   * Applies the graph for `primary` (see the module's Flow).
   *
   * @param primary The primary, as the reconcile received it.
   * @param ctx The reconcile's context.
   * @returns Each dependent's outcome, `ready` and a `Ready` condition.
   * @throws {ApiError} When labelling the primary as the ApplySet's parent fails (a failing
   * dependent is reported in the result instead).
   */
  reconcile(primary: P, ctx: ReconcileContext<P>): Promise<DependentsResult<D>>;
  /**
   * Deletes the graph's members in reverse topological order, each dependent once every
   * dependent depending on it is gone. Call it from `finalize`.
   *
   * @param primary The primary, being deleted.
   * @param ctx The finalize call's context.
   * @param options The propagation policy and the fallback recheck.
   * @returns `undefined` once every member is gone, else a `requeue` to keep the finalizer.
   * @throws {ApiError} When the server refuses a deletion.
   */
  delete(
    primary: P,
    ctx: ReconcileContext<P>,
    options?: DeleteDependentsOptions,
  ): Promise<ReconcileResult>;
}

/** A dependent that failed, and why. */
export interface DependentFailure {
  /** The dependent's name. */
  readonly name: string;
  /** What failed. */
  readonly error: Error;
}

/**
 * One or more dependents failed in a reconcile. `cause` is the first failure's error.
 *
 * @example What the message says
 * ```ts
 * import { DependentsError } from "./dependent.ts";
 * const err = new DependentsError("prod/shop", [{ name: "service", error: new Error("Forbidden") }]);
 * if (!err.message.includes('"service"') || err.name !== "DependentsError") throw new Error();
 * ```
 */
export class DependentsError extends KubenoError {
  /** Each failed dependent. */
  readonly failures: readonly DependentFailure[];
  /**
   * Creates the error.
   *
   * @param key The primary's key.
   * @param failures The failed dependents, at least one.
   */
  constructor(key: string, failures: readonly DependentFailure[]) {
    const list = failures.map((f) => `"${f.name}": ${f.error.message.split("\n")[0]}`);
    super(`Cannot reconcile the dependents of "${key}": ${list.join("; ")}`, {
      cause: failures[0]?.error,
    });
    this.name = "DependentsError";
    this.failures = failures;
  }
}
