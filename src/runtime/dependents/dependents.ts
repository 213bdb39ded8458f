/**
 * `dependents(primary, {...})`: the children of a primary as a graph — each with its kind, a
 * desired state computed from the primary (or nothing, when it should not exist), the
 * dependents it waits for and when it counts as ready. The graph's kinds are owned by the
 * controller that names it in `owns`, `reconcile(primary, { owns: [graph], ... })`; its reconcile
 * applies the graph with `graph.reconcile(obj, ctx)` and, with a finalizer, deletes it in
 * order with `graph.delete(obj, ctx)`. Modelled on Java Operator SDK's dependent resources and
 * workflows (`dependsOn`, reconcile precondition, ready postcondition) and on kro's pruning.
 *
 * ## Flow
 *
 * `graph.reconcile(obj, ctx)`, once per reconcile:
 *
 * 1. Labels the primary as the parent of an ApplySet (KEP-3659): `applyset.kubernetes.io/id`,
 *    and the tooling and `contains-group-kinds` annotations (a patch only when missing).
 * 2. Computes each dependent's desired object in topological order. A dependent is absent
 *    when `desired` returns `undefined`, when its `precondition` is false, or when a
 *    dependent it depends on is absent.
 * 3. Applies the present ones (`ctx.apply`: server-side apply, owner reference, the ApplySet
 *    `part-of` label and `kubeno.dev/dependent: <name>`), each as soon as every dependent it
 *    depends on is applied and ready; independent ones concurrently. One whose dependencies
 *    are not ready is not applied in this reconcile (`waiting`).
 * 4. Prunes, in reverse topological order, the members of absent dependents (found in the
 *    cache by their labels and controller owner) and members of present ones left under an
 *    older name.
 *
 * `graph.delete(obj, ctx)` (from `finalize`) deletes the members in reverse topological
 * order: a dependent only once every dependent that depends on it is gone. It returns
 * `undefined` when all are gone (the finalizer is then removed) and a fallback `requeue`
 * otherwise.
 *
 * ## Guarantees
 *
 * - Event-driven: a child's status change (a Deployment's ready replicas, a Job's completion)
 *   is an event of an owned kind, which enqueues the primary its controller ownerReference
 *   names; a Service's EndpointSlices are watched and mapped to the Service's owner. The
 *   next reconcile applies what was waiting. Nothing polls while the cluster moves.
 * - No write in the steady state: `ctx.apply` skips an apply whose desired object the
 *   controller last applied and the cache still holds; the parent's labels are patched once.
 * - Consistency: pruning and readiness read `ctx.cache`, which holds the context's own writes
 *   at once and which the next reconcile waits to show them (see `reconcile`): a child just
 *   applied is never pruned as unknown, a child just deleted is not deleted again.
 *
 * ## Caveats
 *
 * - A member is recognised by its labels and controller owner: objects this graph did not
 *   create are never pruned.
 * - `kubectl apply --prune --applyset` recognises a custom resource as a parent only when its
 *   CRD carries the label `applyset.kubernetes.io/is-parent-type: "true"`: the operator's
 *   `install` and `manifests` add it to the CRD of every primary with dependents.
 *
 * ## Errors
 *
 * A failed apply or prune does not stop the independent branches: the result names each
 * failure, and its `error` (a {@linkcode DependentsError}) is for the reconcile to throw, so
 * that the key is retried with backoff.
 *
 * @module
 */
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import type { WatchSpec } from "../controller/reconcile.ts";
import type { Dependent, Dependents } from "./dependent.ts";
import { deleteGraph, endpointSliceWatch, reconcileGraph } from "./_workflow.ts";

/** What a dependent's name may be: a label value (it is the `kubeno.dev/dependent` label). */
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/**
 * Declares the dependents of `primary` as a graph. See the module docs for the flow.
 *
 * @typeParam P The primary object type, inferred from `primary`.
 * @typeParam D Each dependent's object type by name, inferred from the declarations.
 * @param primary The primary kind.
 * @param specs The dependents by name (names are label values, e.g. `deployment`).
 * @returns A frozen graph to name in `reconcile(primary, { owns: [graph] })`.
 * @throws {TypeError} When a name is not a label value, a declaration has no `resource` or
 * no `desired` function, `dependsOn` names an unknown dependent, or the graph has a cycle.
 *
 * @example A ConfigMap, then a Deployment once it exists
 * ```ts
 * import { dependents } from "./dependents.ts";
 * import { reconcile } from "../controller/reconcile.ts";
 * import { ConfigMap, Secret } from "../../core/kinds.ts";
 * import { Deployment } from "../../core/kinds_workloads.ts";
 * const children = dependents(Secret, {
 *   config: {
 *     resource: ConfigMap,
 *     desired: (s) => ({ metadata: { name: s.metadata.name! }, data: { keys: "a" } }),
 *   },
 *   web: {
 *     resource: Deployment,
 *     dependsOn: ["config"],
 *     desired: (s) => ({
 *       metadata: { name: s.metadata.name! },
 *       spec: {
 *         selector: { matchLabels: { app: "web" } },
 *         template: {
 *           metadata: { labels: { app: "web" } },
 *           spec: { containers: [{ name: "web", image: "nginx" }] },
 *         },
 *       },
 *     }),
 *   },
 * });
 * const controller = reconcile(Secret, {
 *   owns: [children],
 *   async reconcile(secret, ctx) {
 *     const result = await children.reconcile(secret, ctx);
 *     if (result.error) throw result.error;
 *   },
 * });
 * if (children.order.join() !== "config,web") throw new Error();
 * if (controller.owns.map((k) => k.kind).join() !== "ConfigMap,Deployment") throw new Error();
 * ```
 */
export function dependents<P extends KubeObject, D extends Record<string, KubeObject>>(
  primary: Resource<P>,
  specs: { [K in keyof D]: Dependent<P, D[K]> },
): Dependents<P, D> {
  const fail = (msg: string): never => {
    throw new TypeError(`Cannot declare the dependents of ${primary.kind}: ${msg}`);
  };
  const all = specs as Record<string, Dependent<P, KubeObject>>;
  for (const [name, spec] of Object.entries(all)) {
    if (!NAME.test(name)) fail(`name "${name}" is not a label value such as "deployment"`);
    if (!spec?.resource || typeof spec.resource.kind !== "string") {
      fail(`"${name}" has no resource`);
    }
    if (typeof spec.desired !== "function") fail(`"${name}" has no desired function`);
    for (const dep of spec.dependsOn ?? []) {
      if (!(dep in all)) fail(`"${name}" depends on "${dep}", which is not declared`);
      if (dep === name) fail(`"${name}" depends on itself`);
    }
  }
  const order = topologicalOrder(all, fail) as (keyof D & string)[];
  const owns: Resource<any>[] = [];
  for (const name of order) {
    const res = all[name].resource;
    if (!owns.some((r) => r.apiVersion === res.apiVersion && r.kind === res.kind)) owns.push(res);
  }
  const needsEndpoints = order.some((n) => all[n].resource.kind === "Service" && !all[n].ready);
  const watches: WatchSpec<any>[] = needsEndpoints ? [endpointSliceWatch(primary)] : [];
  const graph: Dependents<P, D> = {
    type: "dependents",
    resource: primary,
    order: Object.freeze(order),
    specs: Object.freeze({ ...specs }),
    owns: Object.freeze(owns),
    watches: Object.freeze(watches),
    reconcile: (obj, ctx) => reconcileGraph(graph, obj, ctx),
    delete: (obj, ctx, options) => deleteGraph(graph, obj, ctx, options),
  };
  return Object.freeze(graph);
}

/** Kahn's algorithm, ties in declaration order. */
function topologicalOrder(
  all: Record<string, Dependent<any, any>>,
  fail: (msg: string) => never,
): string[] {
  const names = Object.keys(all);
  const pending = new Map(names.map((n) => [n, new Set(all[n].dependsOn ?? [])]));
  const out: string[] = [];
  while (pending.size) {
    const next = [...pending.keys()].find((n) =>
      [...pending.get(n)!].every((d) => !pending.has(d))
    );
    if (next === undefined) fail(`the dependsOn of ${[...pending.keys()].join(", ")} form a cycle`);
    out.push(next!);
    pending.delete(next!);
  }
  return out;
}
