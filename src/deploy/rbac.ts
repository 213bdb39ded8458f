/**
 * Least-privilege RBAC derived from what an operator's controllers touch, as controller-gen
 * derives it from `+kubebuilder:rbac` markers — except that here nothing is written by hand:
 * the controllers' `resource`, `owns`, `watches`, `reads` (their `caches`, with the namespaces
 * each kind is cached in) and `finalizer` say it all.
 *
 * @module
 */
import type { PolicyRule } from "../core/kinds_cluster.ts";
import type { Resource } from "../core/resource.ts";
import { isBuiltInGroup } from "../core/built_in_group.ts";

/**
 * What RBAC derivation and the manifests read from a controller: its name, the kind it
 * reconciles, the kinds it owns, watches and caches, and its finalizer. Every `Controller`
 * returned by `reconcile()` has this shape; it is declared here, structurally, so that
 * `deploy/` needs nothing of the controller machinery.
 */
export interface OperatorController {
  /** Controller name, unique within the operator. */
  readonly name: string;
  /** The primary kind it reconciles. */
  readonly resource: Resource;
  /** Kinds it creates and whose controller ownerReference points at a primary. */
  readonly owns: readonly Resource[];
  /** Other kinds it watches and maps to primaries. */
  readonly watches: readonly { readonly resource: Resource }[];
  /** The finalizer it adds to primaries, if any. */
  readonly finalizer?: string;
  /**
   * Every kind it caches (primary, owned, watched, read) and the namespaces each is limited
   * to; RBAC grants `get`/`list`/`watch` on each, in those namespaces only.
   * @default the primary, `owns` and `watches`, unlimited
   */
  readonly caches?: readonly {
    readonly resource: Resource;
    readonly namespaces?: readonly string[];
    /** Why it is cached: `primary`, `owns`, `watches`, `reads`. */
    readonly roles?: readonly string[];
    /** Marked `required`: the operator does not start without it. */
    readonly required?: boolean;
  }[];
}

/** Options of {@link deriveRbac}. */
export interface DeriveRbacOptions {
  /**
   * Whether the operator watches only some namespaces. Then the rules for namespaced kinds
   * go into `namespaced` (a Role in each watched namespace) instead of `cluster`.
   * @default false
   */
  scoped?: boolean;
  /**
   * Extra rules, added where the namespaced kinds' rules go.
   * @default []
   */
  extraRules?: readonly PolicyRule[];
  /**
   * Whether the operator is sharded: its replicas also `list`, `watch` and `delete` Leases in
   * its namespace (the shard and member Leases).
   * @default false
   */
  sharded?: boolean;
}

/** The rules an operator needs, by where they are granted. */
export interface OperatorRbac {
  /** Rules for the ClusterRole; empty when nothing needs cluster scope. */
  cluster: PolicyRule[];
  /** Rules for a Role in each watched namespace; empty unless `scoped`. */
  namespaced: PolicyRule[];
  /**
   * Rules for a Role in one namespace, by namespace: kinds a controller caches only in some
   * namespaces (a cache scope's `namespaces`), added to `namespaced` where both apply.
   */
  inNamespaces: Record<string, PolicyRule[]>;
  /** Rules for a Role in the operator's own namespace: the leader-election Lease. */
  leaderElection: PolicyRule[];
}

const READ = ["get", "list", "watch"];
const OWN = ["create", "update", "patch", "delete"];
const WRITE = ["update", "patch"];
const VERB_ORDER = [...READ, ...OWN, "deletecollection"];

/**
 * Derives the least RBAC an operator's controllers need: `get`/`list`/`watch` on primaries,
 * owned and watched kinds; `create`/`update`/`patch`/`delete` on owned kinds; `update`/`patch`
 * on primaries and their `status` (plus `get`), and on `finalizers` when a finalizer is set
 * or kinds are owned (a controller ownerReference sets `blockOwnerDeletion`, which the
 * `OwnerReferencesPermissionEnforcement` admission plugin allows only with that permission);
 * `create`/`patch` on events; `get`/`create`/`update` on `coordination.k8s.io` leases for
 * leader election (and `list`/`watch`/`delete` when `sharded`). Rules are merged and sorted so that the output is stable.
 *
 * Events (core/v1, as `EventRecorder` writes them) are granted where the namespaced kinds'
 * rules go: an object's events are recorded in its namespace.
 *
 * @param controllers The operator's controllers.
 * @param options Scope and extra rules.
 * @returns The rules by where they are granted.
 *
 * @example Rules of a controller that owns ConfigMaps
 * ```ts
 * import { deriveRbac } from "./rbac.ts";
 * import { resource } from "../core/resource.ts";
 * const Widget = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * const ConfigMap = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * const rbac = deriveRbac([
 *   { name: "widget", resource: Widget, owns: [ConfigMap], watches: [], finalizer: "example.com/x" },
 * ]);
 * const cm = rbac.cluster.find((r) => r.resources?.includes("configmaps"));
 * if (cm?.verbs.join() !== "get,list,watch,create,update,patch,delete") throw new Error();
 * if (!rbac.cluster.some((r) => r.resources?.includes("widgets/finalizers"))) throw new Error();
 * ```
 */
export function deriveRbac(
  controllers: readonly OperatorController[],
  options: DeriveRbacOptions = {},
): OperatorRbac {
  const cluster = new RuleSet();
  const namespaced = new RuleSet();
  const perNamespace = new Map<string, RuleSet>();
  const scoped = options.scoped ?? false;
  let general = false;
  for (const c of controllers) {
    // A kind cached only in some namespaces is granted only there.
    const limits = (res: Resource) =>
      res.namespaced
        ? c.caches?.find((k) => k.resource.group === res.group && k.resource.plural === res.plural)
          ?.namespaces
        : undefined;
    const where = (res: Resource) => {
      const limit = limits(res);
      if (!limit?.length) return [res.namespaced && scoped ? namespaced : cluster];
      return limit.map((ns) => {
        let set = perNamespace.get(ns);
        if (!set) perNamespace.set(ns, set = new RuleSet());
        return set;
      });
    };
    const grant = (res: Resource, sub: string, verbs: readonly string[]) => {
      for (const set of where(res)) set.add(res.group, res.plural + sub, verbs);
    };
    const p = c.resource;
    // Events are recorded in the primary's namespace.
    if (limits(p)?.length) {
      for (const set of where(p)) set.add("", "events", ["create", "patch"]);
    } else general = true;
    for (const k of c.caches ?? []) grant(k.resource, "", READ);
    grant(p, "", [...READ, ...WRITE]);
    grant(p, "/status", ["get", ...WRITE]);
    // Setting a controller ownerReference with blockOwnerDeletion (what `owns` does) needs
    // update on the owner's finalizers where OwnerReferencesPermissionEnforcement is on
    // (OpenShift, hardened clusters), as a finalizer does everywhere.
    if (c.finalizer || c.owns.length) grant(p, "/finalizers", WRITE);
    for (const o of c.owns) grant(o, "", [...READ, ...OWN]);
    for (const w of c.watches) grant(w.resource, "", READ);
  }
  // An optional kind (not built in, not required) is followed through its CRD, cluster-wide.
  const optional = controllers.some((c) =>
    (c.caches ?? []).some((k) =>
      !k.required && k.roles && !k.roles.includes("primary") && !isBuiltInGroup(k.resource.group)
    )
  );
  if (optional) cluster.add("apiextensions.k8s.io", "customresourcedefinitions", READ);
  const rest = scoped ? namespaced : cluster;
  if (general) rest.add("", "events", ["create", "patch"]);
  for (const r of options.extraRules ?? []) rest.addRule(r);
  const lease = new RuleSet();
  lease.add(
    "coordination.k8s.io",
    "leases",
    options.sharded
      ? ["get", "list", "watch", "create", "update", "delete"]
      : ["get", "create", "update"],
  );
  return {
    cluster: cluster.rules(),
    namespaced: namespaced.rules(),
    inNamespaces: Object.fromEntries(
      [...perNamespace.keys()].sort().map((ns) => [ns, perNamespace.get(ns)!.rules()]),
    ),
    leaderElection: lease.rules(),
  };
}

/** Verbs per group and resource; rules with names or URLs are kept as they are. */
class RuleSet {
  #verbs = new Map<string, Set<string>>();
  #other: PolicyRule[] = [];

  add(group: string, resource: string, verbs: readonly string[]): void {
    const key = `${group}\u0000${resource}`;
    const set = this.#verbs.get(key) ?? new Set();
    for (const v of verbs) set.add(v);
    this.#verbs.set(key, set);
  }

  addRule(rule: PolicyRule): void {
    if (rule.resourceNames?.length || rule.nonResourceURLs?.length) {
      this.#other.push(structuredClone(rule));
      return;
    }
    for (const g of rule.apiGroups ?? []) {
      for (const r of rule.resources ?? []) this.add(g, r, rule.verbs);
    }
  }

  /** One rule per group and verb set, resources sorted; groups sorted, core first. */
  rules(): PolicyRule[] {
    const byGroupVerbs = new Map<string, PolicyRule>();
    for (const [key, set] of this.#verbs) {
      const [group, res] = key.split("\u0000");
      const verbs = sortVerbs(set);
      const id = `${group}\u0000${verbs.join(",")}`;
      const rule = byGroupVerbs.get(id);
      if (rule) rule.resources!.push(res);
      else byGroupVerbs.set(id, { apiGroups: [group], resources: [res], verbs });
    }
    const out = [...byGroupVerbs.values()];
    for (const r of out) r.resources!.sort();
    out.sort((a, b) =>
      a.apiGroups![0].localeCompare(b.apiGroups![0]) ||
      a.resources![0].localeCompare(b.resources![0])
    );
    return [...out, ...this.#other];
  }
}

function sortVerbs(set: Set<string>): string[] {
  const rank = (v: string) => {
    const i = VERB_ORDER.indexOf(v);
    return i < 0 ? VERB_ORDER.length : i;
  };
  return [...set].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}
