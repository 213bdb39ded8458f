/**
 * The object key: `namespace/name`, or `name` for cluster-scoped objects. It names an object
 * in a store, in a work queue and in logs; this module is the one place that builds a key
 * and the one place that takes it apart.
 *
 * @module
 */
import type { KubeObject } from "./object.ts";

/** Names an object: its `name`, and its `namespace` for namespaced kinds. */
export interface ObjectName {
  /** Object name. */
  name: string;
  /** Namespace; absent or empty for cluster-scoped objects. */
  namespace?: string;
}

/**
 * The key of an object: `namespace/name`, or `name` for cluster-scoped objects.
 *
 * @param obj An object or an object's name and namespace.
 * @returns The key.
 * @throws {TypeError} When the object has no name.
 *
 * @example Keys
 * ```ts
 * import { objectKey } from "./object_key.ts";
 * if (objectKey({ name: "web", namespace: "prod" }) !== "prod/web") throw new Error();
 * if (objectKey({ metadata: { name: "node-1" } }) !== "node-1") throw new Error();
 * ```
 */
export function objectKey(obj: KubeObject | ObjectName): string {
  const ref = "metadata" in obj ? obj.metadata : obj;
  if (!ref.name) throw new TypeError("Cannot compute the store key of an object without a name");
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/**
 * The name and namespace a key stands for: the inverse of {@linkcode objectKey}.
 *
 * @param key A key built by {@linkcode objectKey}.
 * @returns The name, with the namespace when the key has one.
 *
 * @example Taking a key apart
 * ```ts
 * import { parseObjectKey } from "./object_key.ts";
 * const { namespace, name } = parseObjectKey("prod/web");
 * if (namespace !== "prod" || name !== "web") throw new Error();
 * if (parseObjectKey("node-1").namespace !== undefined) throw new Error();
 * ```
 */
export function parseObjectKey(key: string): ObjectName {
  const slash = key.indexOf("/");
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
