// The workflow of a graph of dependents: desired objects and applies in topological order
// behind readiness gates (independent branches concurrently), prune in reverse topological
// order, and ordered deletion. Everything reads `ctx.cache` (own writes included at once) and
// writes through `ctx`, so the reconcile contract's consistency holds for children too.
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import type { ApplyObject } from "../../client/types.ts";
import type { ConditionInput } from "../../core/conditions.ts";
import type { CacheReader } from "../cache/reader.ts";
import {
  type ReconcileContext,
  type ReconcileResult,
  requeue,
  type WatchSpec,
} from "../controller/reconcile.ts";
import {
  APPLYSET_GROUP_KINDS_ANNOTATION,
  APPLYSET_ID_LABEL,
  APPLYSET_PART_OF_LABEL,
  APPLYSET_TOOLING_ANNOTATION,
  applySetGroupKinds,
  applySetId,
} from "../../core/applyset.ts";
import { builtinReady } from "../../core/readiness.ts";
import { controllerOf } from "../../core/owner.ts";
import { Service } from "../../core/kinds.ts";
import { EndpointSlice } from "../../core/api/discovery/v1.ts";
import {
  type DeleteDependentsOptions,
  type Dependent,
  type DependentFailure,
  type DependentResult,
  type Dependents,
  DependentsError,
  type DependentsResult,
} from "./dependent.ts";

/** The label naming, on each member, the dependent it belongs to. */
export const DEPENDENT_LABEL = "kubeno.dev/dependent";
/** The ApplySet tooling annotation's value. */
const TOOLING = "kubeno/v1";
/** The label the EndpointSlice controller puts on a Service's slices. */
const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

type Graph = Dependents<any, any>;
type Spec = Dependent<any, KubeObject>;

/** The primary's ApplySet id. */
function idOf(graph: Graph, primary: KubeObject): Promise<string> {
  return applySetId({
    name: primary.metadata.name ?? "",
    namespace: graph.resource.namespaced ? primary.metadata.namespace : undefined,
    kind: graph.resource.kind,
    group: graph.resource.group,
  });
}

/** The members of dependent `name` that the cache shows: its labels, controlled by `primary`. */
function membersOf(
  spec: Spec,
  name: string,
  id: string,
  primary: KubeObject,
  cache: CacheReader,
): KubeObject[] {
  const namespace = spec.resource.namespaced ? primary.metadata.namespace : undefined;
  return cache.list(spec.resource, {
    ...(namespace ? { namespace } : {}),
    labelSelector: { [APPLYSET_PART_OF_LABEL]: id, [DEPENDENT_LABEL]: name },
  }).filter((o) => controllerOf(o)?.uid === primary.metadata.uid);
}

/** Labels the primary as the parent of its ApplySet, when it is not yet. */
async function markParent(
  graph: Graph,
  primary: KubeObject,
  id: string,
  ctx: ReconcileContext<any>,
): Promise<void> {
  const groupKinds = applySetGroupKinds(graph.owns);
  const labels = primary.metadata.labels ?? {};
  const annotations = primary.metadata.annotations ?? {};
  if (
    labels[APPLYSET_ID_LABEL] === id && annotations[APPLYSET_TOOLING_ANNOTATION] === TOOLING &&
    annotations[APPLYSET_GROUP_KINDS_ANNOTATION] === groupKinds
  ) return;
  await ctx.patch(graph.resource, primary, {
    metadata: {
      labels: { [APPLYSET_ID_LABEL]: id },
      annotations: {
        [APPLYSET_TOOLING_ANNOTATION]: TOOLING,
        [APPLYSET_GROUP_KINDS_ANNOTATION]: groupKinds,
      },
    },
  } as any);
}

export async function reconcileGraph(
  graph: Graph,
  primary: KubeObject,
  ctx: ReconcileContext<any>,
): Promise<DependentsResult<any>> {
  const id = await idOf(graph, primary);
  await markParent(graph, primary, id, ctx);
  const specs = graph.specs as Record<string, Spec>;

  // 1. Each dependent once those it depends on are resolved (independent ones concurrently):
  //    absent when a dependency is absent, its precondition is false or `desired` says so;
  //    applied when every dependency is ready; else waiting.
  const runs = new Map<string, Promise<DependentResult>>();
  const run = (name: string): Promise<DependentResult> => {
    let p = runs.get(name);
    if (!p) runs.set(name, p = applyOne(name));
    return p;
  };
  const desiredOf = async (name: string, spec: Spec) => {
    if (spec.precondition && !spec.precondition(primary, ctx.cache)) return undefined;
    const resolved: Record<string, KubeObject> = {};
    for (const dep of ancestorsOf(specs, name)) {
      const { object } = await run(dep); // resolved already: dependencies are awaited first
      if (object) resolved[dep] = object;
    }
    return await spec.desired(primary, {
      cache: ctx.cache,
      dependents: Object.freeze(resolved),
      signal: ctx.signal,
    });
  };
  const applyOne = async (name: string): Promise<DependentResult> => {
    const spec = specs[name];
    const deps = await Promise.all((spec.dependsOn ?? []).map(run));
    if (deps.some((r) => r.state === "absent")) return { name, state: "absent" };
    let desired: ApplyObject<KubeObject> | undefined;
    try {
      desired = await desiredOf(name, spec);
    } catch (e) {
      return { name, state: "failed", error: asError(e) };
    }
    if (!desired) return { name, state: "absent" };
    const waitsFor = deps.filter((r) => r.state !== "ready").map((r) => r.name);
    if (waitsFor.length) {
      const object = ctx.cache.get(spec.resource, desired.metadata.name, {
        ...(desired.metadata.namespace ? { namespace: desired.metadata.namespace } : {}),
      });
      return { name, state: "waiting", waitsFor, ...(object ? { object } : {}) };
    }
    try {
      const labelled = {
        ...desired,
        metadata: {
          ...desired.metadata,
          labels: {
            ...desired.metadata.labels,
            [APPLYSET_PART_OF_LABEL]: id,
            [DEPENDENT_LABEL]: name,
          },
        },
      };
      const object = await ctx.apply(spec.resource, labelled);
      // Members left under an older name are this dependent's no more.
      for (const stale of membersOf(spec, name, id, primary, ctx.cache)) {
        if (stale.metadata.name !== object.metadata.name) await ctx.delete(spec.resource, stale);
      }
      const ready = isReady(spec, object, ctx.cache);
      return { name, state: ready ? "ready" : "notReady", object };
    } catch (e) {
      return { name, state: "failed", error: asError(e) };
    }
  };
  const results = new Map<string, DependentResult>();
  for (const r of await Promise.all(graph.order.map(run))) results.set(r.name, r);

  // 2. Prune the absent ones, dependents before what they depend on.
  for (const name of [...graph.order].reverse()) {
    if (results.get(name)!.state !== "absent") continue;
    const spec = specs[name];
    try {
      const members = membersOf(spec, name, id, primary, ctx.cache);
      for (const m of members) {
        if (!m.metadata.deletionTimestamp) await ctx.delete(spec.resource, m);
      }
      if (members.length) results.set(name, { name, state: "pruned" });
    } catch (e) {
      results.set(name, { name, state: "failed", error: asError(e) });
    }
  }

  const ordered = graph.order.map((n) => results.get(n)!);
  const failures: DependentFailure[] = ordered.flatMap((r) =>
    r.state === "failed" ? [{ name: r.name, error: r.error! }] : []
  );
  const ready = ordered.every((r) => ["ready", "absent", "pruned"].includes(r.state));
  return {
    dependents: Object.fromEntries(results),
    ready,
    condition: conditionOf(graph, primary, ordered),
    ...(failures.length ? { error: new DependentsError(ctx.key, failures) } : {}),
  };
}

/** The `Ready` condition summing up the outcomes, given in topological order. */
function conditionOf(
  graph: Graph,
  primary: KubeObject,
  ordered: readonly DependentResult[],
): ConditionInput {
  const generation = primary.metadata.generation;
  const base = {
    type: "Ready",
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  const describe = (r: DependentResult) => {
    const spec = (graph.specs as Record<string, Spec>)[r.name];
    const obj = r.object?.metadata.name;
    return `dependent "${r.name}" (${spec.resource.kind}${obj ? ` "${obj}"` : ""})`;
  };
  const failed = ordered.find((r) => r.state === "failed");
  if (failed) {
    const msg = failed.error?.message.split("\n")[0] ?? "";
    return {
      ...base,
      status: "False",
      reason: "DependentFailed",
      message: `The ${describe(failed)} failed: ${msg}`,
    };
  }
  const notReady = ordered.find((r) => r.state === "notReady" || r.state === "waiting");
  if (notReady) {
    const why = notReady.state === "waiting"
      ? `waits for ${notReady.waitsFor!.map((n) => `"${n}"`).join(", ")}`
      : "is not ready";
    return {
      ...base,
      status: "False",
      reason: "DependentNotReady",
      message: `The ${describe(notReady)} ${why}`,
    };
  }
  const present = ordered.filter((r) => r.state === "ready").length;
  return {
    ...base,
    status: "True",
    reason: "DependentsReady",
    message: `${present} of ${ordered.length} dependents exist and are ready`,
  };
}

/** The dependent's readiness: its own function, the built-in default, or applied = ready. */
function isReady(spec: Spec, obj: KubeObject, cache: CacheReader): boolean {
  if (spec.ready) return spec.ready(obj, cache);
  if (obj.apiVersion === "v1" && obj.kind === "Service") {
    return serviceReady(obj, cache) && builtinReady(obj) !== false;
  }
  return builtinReady(obj) ?? true;
}

/**
 * A Service is ready when it routes somewhere: an ExternalName or a Service without selector
 * (its endpoints are someone else's) once created; otherwise once one of its EndpointSlices
 * holds a ready endpoint.
 */
function serviceReady(svc: KubeObject, cache: CacheReader): boolean {
  const spec = (svc as { spec?: { type?: string; selector?: Record<string, string> } }).spec;
  if (spec?.type === "ExternalName" || !Object.keys(spec?.selector ?? {}).length) return true;
  const slices = cache.list(EndpointSlice, {
    namespace: svc.metadata.namespace!,
    labelSelector: { [SERVICE_NAME_LABEL]: svc.metadata.name! },
  });
  return slices.some((s) => (s.endpoints ?? []).some((e) => e.conditions?.ready !== false));
}

/**
 * The watch that brings a Service's readiness to its owner: an EndpointSlice maps to the
 * Service it serves, and the Service to the primary that controls it.
 */
export function endpointSliceWatch(primary: Resource<any>): WatchSpec<EndpointSlice> {
  return {
    resource: EndpointSlice,
    labelSelector: SERVICE_NAME_LABEL,
    map(slice, cache) {
      const name = slice.metadata.labels?.[SERVICE_NAME_LABEL];
      const namespace = slice.metadata.namespace;
      if (!name || !namespace) return [];
      const svc = cache.get(Service, name, { namespace });
      const owner = svc && controllerOf(svc);
      if (!owner || owner.kind !== primary.kind || owner.apiVersion !== primary.apiVersion) {
        return [];
      }
      return [{ name: owner.name, namespace: primary.namespaced ? namespace : undefined }];
    },
  };
}

export async function deleteGraph(
  graph: Graph,
  primary: KubeObject,
  ctx: ReconcileContext<any>,
  options: DeleteDependentsOptions = {},
): Promise<ReconcileResult> {
  const { propagationPolicy = "Foreground", recheckMs = 10_000 } = options;
  const id = await idOf(graph, primary);
  const specs = graph.specs as Record<string, Spec>;
  const gone = new Set<string>();
  const dependers = (name: string) =>
    graph.order.filter((n) => (specs[n].dependsOn ?? []).includes(name));
  for (const name of [...graph.order].reverse()) {
    if (dependers(name).some((n) => !gone.has(n))) continue;
    const spec = specs[name];
    for (const m of membersOf(spec, name, id, primary, ctx.cache)) {
      if (!m.metadata.deletionTimestamp) {
        await ctx.delete(spec.resource, m, { propagationPolicy });
      }
    }
    // Gone once the cache (with this context's deletions) no longer shows it: a member with
    // finalizers (Foreground: its own children first) still counts until it is removed.
    if (!membersOf(spec, name, id, primary, ctx.cache).length) gone.add(name);
  }
  return gone.size === graph.order.length ? undefined : requeue(recheckMs);
}

/** The dependents `name` depends on, directly or through others. */
function ancestorsOf(specs: Record<string, Spec>, name: string): string[] {
  const seen = new Set<string>();
  const visit = (n: string) => {
    for (const d of specs[n].dependsOn ?? []) {
      if (seen.has(d)) continue;
      seen.add(d);
      visit(d);
    }
  };
  visit(name);
  return [...seen];
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
