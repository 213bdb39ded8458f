/**
 * A resource is what kubeno needs to know to talk about one kind of object: its
 * group/version/kind (GVK), its REST plural (GVR) and whether it is namespaced. Built-in
 * kinds and custom resources from `defineResource` are both `Resource<T>`, where `T` is the
 * object type the API server returns.
 *
 * @module
 */
import type { KubeObject } from "./object.ts";

/** How to address one kind on the API server, typed by the objects it holds. */
export interface Resource<T extends KubeObject = KubeObject> {
  /** API group; `""` for the core group. */
  readonly group: string;
  /** API version, e.g. `v1`. */
  readonly version: string;
  /** Kind, e.g. `Deployment`. */
  readonly kind: string;
  /** Lower-case plural used in URLs, e.g. `deployments`. */
  readonly plural: string;
  /** True for namespaced kinds, false for cluster-scoped ones. */
  readonly namespaced: boolean;
  /** `group/version`, or just `version` for the core group. */
  readonly apiVersion: string;
  /**
   * Never set at run time: carries the object type so that functions taking a resource can
   * infer it.
   */
  readonly __object?: T;
}

/** The object type of a resource: `ObjectOf<typeof Deployment>`. */
export type ObjectOf<R> = R extends Resource<infer T> ? T : never;

/** What `resource()` needs to describe a kind. */
export interface ResourceInit {
  /** API group; `""` for the core group. */
  group: string;
  /** API version, e.g. `v1`. */
  version: string;
  /** Kind, e.g. `Deployment`. */
  kind: string;
  /**
   * Lower-case plural used in URLs.
   * @default the kind lower-cased with an English plural suffix
   */
  plural?: string;
  /**
   * Whether objects live in namespaces.
   * @default true
   */
  namespaced?: boolean;
}

/**
 * Describes a kind that already exists on the API server (a built-in kind or a CRD that
 * kubeno did not define), typed by its object type.
 *
 * @param init The kind's group, version, kind and, when irregular, its plural.
 * @returns A frozen resource descriptor.
 * @throws {TypeError} When `kind` or `version` is empty.
 *
 * @example Describe a kind
 * ```ts
 * import { resource } from "./resource.ts";
 * const Widgets = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * if (Widgets.plural !== "widgets" || Widgets.apiVersion !== "example.com/v1") throw new Error();
 * ```
 */
export function resource<T extends KubeObject = KubeObject>(init: ResourceInit): Resource<T> {
  if (!init.kind) throw new TypeError("Cannot describe a resource: kind is empty");
  if (!init.version) {
    throw new TypeError(`Cannot describe resource "${init.kind}": version is empty`);
  }
  return Object.freeze({
    group: init.group,
    version: init.version,
    kind: init.kind,
    plural: init.plural ?? pluralize(init.kind),
    namespaced: init.namespaced ?? true,
    apiVersion: init.group ? `${init.group}/${init.version}` : init.version,
  });
}

/**
 * The REST plural Kubernetes tooling derives from a kind (as kubebuilder's `flect` does for
 * the common cases): `Policy` → `policies`, `Ingress` → `ingresses`, `Myapp` → `myapps`.
 *
 * @param kind A kind in UpperCamelCase.
 * @returns Its lower-case plural.
 *
 * @example Plurals
 * ```ts
 * import { pluralize } from "./resource.ts";
 * if (pluralize("NetworkPolicy") !== "networkpolicies") throw new Error();
 * ```
 */
export function pluralize(kind: string): string {
  const k = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/**
 * A short `group/version, Kind=...` string for messages, like `apps/v1, Kind=Deployment`.
 *
 * @param res The resource.
 * @returns Its printable GVK.
 *
 * @example Naming a resource in an error
 * ```ts
 * import { gvkString, resource } from "./resource.ts";
 * const r = resource({ group: "", version: "v1", kind: "ConfigMap" });
 * if (gvkString(r) !== "v1, Kind=ConfigMap") throw new Error();
 * ```
 */
export function gvkString(res: Resource): string {
  return `${res.apiVersion}, Kind=${res.kind}`;
}
