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
 * 2. Computes each dependent's desired object, `await desired(primary, ctx)`, as soon as every
 *    dependent it depends on is resolved (applied, or found waiting); independent ones
 *    concurrently. `ctx.cache` reads the controller's cache and `ctx.dependents` holds the
 *    objects of the dependents it depends on, directly or through others, as applied in this
 *    reconcile (Java Operator SDK's `desired(primary, context)`). A dependent is absent when
 *    `desired` returns `undefined`, when its `precondition` is false, or when a dependent it
 *    depends on is absent.
 * 3. Applies the present ones (`ctx.apply`: server-side apply, owner reference, the ApplySet
 *    `part-of` label and `kubeno.dev/dependent: <name>`), each once every dependent it depends
 *    on is applied and ready. One whose dependencies are not ready is not applied in this
 *    reconcile (`waiting`).
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
 * ## Rolling pods when an input changes
 *
 * A Deployment that mounts a ConfigMap does not restart its pods when the ConfigMap changes:
 * only a change of its pod template rolls it. The recommended way (Helm's `checksum/config`,
 * Java Operator SDK's WebPage sample) is a hash of the input in a pod-template annotation: make
 * the Deployment depend on the ConfigMap, and in its async `desired` hash what it mounts
 * (`ctx.dependents.config`, the ConfigMap as just applied) with `crypto.subtle.digest`. A
 * changed input changes the template, which rolls the pods; an unchanged one gives the same
 * object, so nothing is written. A Secret or other object the graph does not own is read the
 * same way from `ctx.cache` (declare its kind in `reads` or `watches`, so that its changes
 * reconcile). No update hook is needed for this: `desired` is the one place that says what
 * the child should be.
 *
 * ## Caveats
 *
 * - `desired` runs in every reconcile: keep it a function of what it reads, with no writes.
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
 *
 * @example A pod template that rolls when the ConfigMap it mounts changes
 * ```ts
 * import { dependents } from "./dependents.ts";
 * import { ConfigMap, Secret } from "../../core/kinds.ts";
 * import { Deployment } from "../../core/kinds_workloads.ts";
 *
 * async function sha256(text: string): Promise<string> {
 *   const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
 *   return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
 * }
 * const labels = { app: "web" };
 * const children = dependents(Secret, {
 *   config: {
 *     resource: ConfigMap,
 *     desired: (s) => ({
 *       metadata: { name: "web" },
 *       data: { "index.html": s.metadata.annotations?.html ?? "" },
 *     }),
 *   },
 *   web: {
 *     resource: Deployment,
 *     dependsOn: ["config"],
 *     async desired(_s, ctx) {
 *       const config = ctx.dependents.config as ConfigMap | undefined; // as just applied
 *       const hash = await sha256(JSON.stringify(config?.data ?? {}));
 *       return {
 *         metadata: { name: "web" },
 *         spec: {
 *           selector: { matchLabels: labels },
 *           template: {
 *             metadata: { labels, annotations: { "example.com/config-hash": hash } },
 *             spec: {
 *               containers: [{ name: "web", image: "nginx" }],
 *               volumes: [{ name: "html", configMap: { name: "web" } }],
 *             },
 *           },
 *         },
 *       };
 *     },
 *   },
 * });
 * if (children.order.join() !== "config,web") throw new Error();
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
