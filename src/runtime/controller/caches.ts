/**
 * What a controller caches: one entry per kind it names (its primary, `owns`, `watches` and
 * `reads`), each with a scope (namespaces, selectors, transform) and indexes. The runner
 * starts informers from these entries, `ctx.cache` answers from them, and the operator
 * derives RBAC from them.
 *
 * @module
 */
import type { KubeObject } from "../../core/object.ts";
import type { Resource } from "../../core/resource.ts";
import { isMetadataOnly } from "../../core/metadata_only.ts";
import { kindKey } from "../../core/kind_key.ts";
import { isBuiltInGroup } from "../../core/built_in_group.ts";
import type { IndexFunc } from "../cache/store.ts";

/**
 * Which objects of a kind a controller caches, as controller-runtime's
 * `cache.Options.ByObject`. Kinds whose entries have the same scope share one informer.
 *
 * @typeParam U The object type.
 */
export interface CacheScope<U extends KubeObject = any> {
  /**
   * Cache (and act on) this kind only in these namespaces, one watch each; overrides the
   * manager's namespaces. RBAC for the kind is then a Role in each of them.
   * @default the manager's namespaces (all, unless the operator watches some)
   */
  readonly namespaces?: readonly string[];
  /**
   * Cache only objects whose labels match, e.g. `app.kubernetes.io/managed-by=myapp`.
   * @default every object
   */
  readonly labelSelector?: string;
  /**
   * Cache only objects whose fields match, e.g. `status.phase=Running`.
   * @default every object
   */
  readonly fieldSelector?: string;
  /**
   * Applied to each object before it is cached, e.g. to drop fields never read; it may
   * mutate its argument.
   * @default the manager's (strips `metadata.managedFields`)
   */
  readonly transform?: (obj: U) => U;
}

/**
 * One kind in `owns` or `reads` with its scope and indexes; a bare resource means the
 * whole kind, no index.
 *
 * @typeParam U The object type.
 */
export interface CacheSpec<U extends KubeObject = any> extends CacheScope<U> {
  /** The kind, or its `metadataOnly(...)` view to cache metadata only. */
  readonly resource: Resource<U>;
  /**
   * Indexes on this kind by name, usable in `ctx.cache.list(kind, { index: { name: value } })`.
   * @default {}
   */
  readonly indexes?: Readonly<Record<string, IndexFunc<U>>>;
  /**
   * Keep today's start-up rule for this kind: the operator does not start while the API
   * server does not serve it (one line, exit 1). Without it, a kind that is not one of
   * Kubernetes' built-in kinds is optional: the controller runs without it until its
   * CustomResourceDefinition is established (see {@linkcode isOptionalKind}).
   * @default false
   */
  readonly required?: boolean;
}

/** Why a controller caches a kind. */
export type CacheRole = "primary" | "owns" | "watches" | "reads";

/** One kind a controller caches, its declarations merged: what `Controller.caches` holds. */
export interface CachedKind extends CacheScope<any> {
  /** The kind (a `metadataOnly(...)` view when cached metadata-only). */
  readonly resource: Resource<any>;
  /** Every reason it is cached, in declaration order. */
  readonly roles: readonly CacheRole[];
  /** Its indexes, from every declaration. */
  readonly indexes: Readonly<Record<string, IndexFunc<any>>>;
  /** Whether a declaration marked it `required` (the primary always is). */
  readonly required?: boolean;
}

/** What {@linkcode cachedKinds} merges. */
export interface CacheDeclarations {
  /** The controller's name, for errors. */
  name: string;
  /** The primary kind, its scope and indexes. */
  primary: CacheSpec<any>;
  /** `owns`, `watches`, `reads`, in that order. */
  entries: readonly (readonly [Exclude<CacheRole, "primary">, Resource<any> | CacheSpec<any>])[];
}

/**
 * Turns an entry of `owns` or `reads` into a spec.
 *
 * @param entry A resource or a spec.
 * @returns The spec.
 */
export function cacheSpecOf(entry: Resource<any> | CacheSpec<any>): CacheSpec<any> {
  return "resource" in entry ? entry : { resource: entry };
}

/**
 * The kinds a controller caches, one entry per kind (full and metadata-only apart), with its
 * declarations merged.
 *
 * @param decl The primary and the entries of `owns`, `watches` and `reads`.
 * @returns The cached kinds, primary first.
 * @throws {TypeError} When a kind is declared twice with different scopes, an index name is
 * declared twice for a kind, or a cluster-scoped kind is given namespaces.
 */
export function cachedKinds(decl: CacheDeclarations): CachedKind[] {
  const out = new Map<string, CachedKind>();
  const fail = (msg: string) => {
    throw new TypeError(`Cannot define controller "${decl.name}": ${msg}`);
  };
  const all: [CacheRole, CacheSpec<any>][] = [
    ["primary", decl.primary],
    ...decl.entries.map(([role, e]) => [role, cacheSpecOf(e)] as [CacheRole, CacheSpec<any>]),
  ];
  for (const [role, spec] of all) {
    const res = spec.resource;
    if (!res || typeof res.kind !== "string") fail(`an entry of ${role} has no resource`);
    const what = `${isMetadataOnly(res) ? "metadataOnly(" + res.kind + ")" : res.kind}`;
    if (spec.namespaces?.length && !res.namespaced) {
      fail(`${what} is cluster-scoped; it cannot be cached in namespaces`);
    }
    if (spec.namespaces?.some((ns) => !ns)) fail(`${what} has an empty namespace`);
    const key = kindKey(res);
    const scope: CacheScope = {
      ...(spec.namespaces?.length
        ? { namespaces: Object.freeze([...new Set(spec.namespaces)]) }
        : {}),
      ...(spec.labelSelector ? { labelSelector: spec.labelSelector } : {}),
      ...(spec.fieldSelector ? { fieldSelector: spec.fieldSelector } : {}),
      ...(spec.transform ? { transform: spec.transform } : {}),
    };
    const prev = out.get(key);
    const required = role === "primary" || spec.required === true;
    if (!prev) {
      out.set(key, {
        resource: res,
        roles: [role],
        indexes: { ...spec.indexes },
        ...scope,
        ...(required ? { required } : {}),
      });
      continue;
    }
    // A declaration without a scope takes the other's; two scopes must agree.
    const scoped = (s: CacheScope) =>
      (s.namespaces ?? []).join(",") + "|" + (s.labelSelector ?? "") + "|" +
      (s.fieldSelector ?? "");
    const has = (s: CacheScope) =>
      !!(s.namespaces || s.labelSelector || s.fieldSelector || s.transform);
    if (
      has(prev) && has(scope) &&
      (scoped(prev) !== scoped(scope) || prev.transform !== scope.transform)
    ) {
      fail(
        `${what} is declared in ${
          prev.roles[0]
        } and ${role} with different cache scopes; declare the scope once, or the same in both`,
      );
    }
    for (const [name, fn] of Object.entries(spec.indexes ?? {})) {
      if (prev.indexes[name] && prev.indexes[name] !== fn) {
        fail(`index "${name}" on ${what} is declared twice`);
      }
    }
    out.set(key, {
      ...(has(prev) ? prev : { ...prev, ...scope }),
      roles: [...prev.roles, role],
      indexes: { ...prev.indexes, ...spec.indexes },
      ...(required || prev.required ? { required: true } : {}),
    });
  }
  return [...out.values()].map((k) =>
    Object.freeze({ ...k, roles: Object.freeze([...k.roles]), indexes: Object.freeze(k.indexes) })
  );
}

/**
 * Whether a cached kind is optional: not the primary, not marked `required`, and not in one
 * of Kubernetes' built-in API groups. An optional kind the API server does not serve does
 * not stop the operator; the manager starts its informer once its CustomResourceDefinition
 * is established and stops it when the CRD is deleted.
 *
 * @param kind A cached kind of a controller.
 * @returns `true` when optional.
 *
 * @example Built-in kinds are never optional
 * ```ts
 * import { isOptionalKind } from "./caches.ts";
 * import { resource } from "../../core/resource.ts";
 * import { ConfigMap } from "../../core/kinds.ts";
 * const Certificate = resource({ group: "cert-manager.io", version: "v1", kind: "Certificate" });
 * const kind = (res: typeof ConfigMap, required?: boolean) =>
 *   ({ resource: res, roles: ["owns"] as const, indexes: {}, required });
 * if (isOptionalKind(kind(ConfigMap)) || !isOptionalKind(kind(Certificate))) throw new Error();
 * if (isOptionalKind(kind(Certificate, true))) throw new Error("required is not optional");
 * ```
 */
export function isOptionalKind(kind: CachedKind): boolean {
  return !kind.required && !kind.roles.includes("primary") &&
    !isBuiltInGroup(kind.resource.group);
}
