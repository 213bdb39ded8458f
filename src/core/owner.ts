/**
 * OwnerReferences: how an object names the objects it depends on, so that the garbage
 * collector deletes it with its owner and controllers find the owner from the object.
 *
 * @module
 */
import type { KubeObject, OwnerReference } from "./object.ts";

/** Options of {@linkcode ownerReference}. */
export interface OwnerReferenceOptions {
  /**
   * Mark the owner as the object's managing controller.
   * @default false
   */
  controller?: boolean;
  /**
   * Keep the owner from being deleted in the foreground before this object is.
   * @default the value of `controller`
   */
  blockOwnerDeletion?: boolean;
}

/**
 * An ownerReference pointing at `owner`.
 *
 * @param owner An object as read from the server: `apiVersion`, `kind`, `metadata.name`
 * and `metadata.uid` set.
 * @param options Whether it is the controller reference.
 * @returns The reference.
 * @throws {TypeError} When `owner` lacks `apiVersion`, `kind`, name or uid.
 *
 * @example A plain owner reference
 * ```ts
 * import { ownerReference } from "./owner.ts";
 * const owner = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", uid: "u1" } };
 * const ref = ownerReference(owner);
 * if (ref.uid !== "u1" || ref.controller !== false) throw new Error();
 * ```
 */
export function ownerReference(
  owner: KubeObject,
  options: OwnerReferenceOptions = {},
): OwnerReference {
  const { apiVersion, kind } = owner;
  const { name, uid } = owner.metadata ?? {};
  if (!apiVersion || !kind || !name || !uid) {
    const missing = [
      !apiVersion && "apiVersion",
      !kind && "kind",
      !name && "metadata.name",
      !uid && "metadata.uid",
    ].filter(Boolean).join(", ");
    throw new TypeError(
      `Cannot reference owner ${
        describe(owner)
      }: ${missing} missing (use the object as read from the server)`,
    );
  }
  const controller = options.controller ?? false;
  return {
    apiVersion,
    kind,
    name,
    uid,
    controller,
    blockOwnerDeletion: options.blockOwnerDeletion ?? controller,
  };
}

/**
 * Makes `owner` the managing controller of `obj` by adding (or updating) a controller
 * ownerReference in `obj.metadata.ownerReferences`, as controller-runtime's
 * `SetControllerReference`. Other owner references are kept. Set `obj.metadata.namespace`
 * first: an object without one is taken to be cluster-scoped.
 *
 * @typeParam O The object type.
 * @param owner The owner, as read from the server.
 * @param obj The object to own; changed in place.
 * @returns `obj`.
 * @throws {TypeError} When the owner is namespaced and `obj` is in another namespace or is
 * cluster-scoped, when `obj` already has a different controller owner, or when `owner`
 * lacks `apiVersion`, `kind`, name or uid.
 *
 * @example Owning a ConfigMap
 * ```ts
 * import { setControllerReference } from "./owner.ts";
 * const app = {
 *   apiVersion: "apps.kubeno.dev/v1", kind: "Myapp",
 *   metadata: { name: "web", namespace: "prod", uid: "u1" },
 * };
 * const cm = setControllerReference(app, { metadata: { name: "web-config", namespace: "prod" } });
 * if (cm.metadata.ownerReferences?.[0].controller !== true) throw new Error();
 * try {
 *   setControllerReference(app, { metadata: { name: "x", namespace: "dev" } });
 *   throw new Error("Accepted a cross-namespace owner");
 * } catch (e) {
 *   if (!(e instanceof TypeError)) throw e;
 * }
 * ```
 */
export function setControllerReference<O extends { metadata: KubeObject["metadata"] }>(
  owner: KubeObject,
  obj: O,
): O & { metadata: { ownerReferences: OwnerReference[] } } {
  const ref = ownerReference(owner, { controller: true });
  const ownerNs = owner.metadata.namespace;
  const objNs = obj.metadata.namespace;
  if (ownerNs && !objNs) {
    throw new TypeError(
      `Cannot make ${describe(owner)} the controller of ${
        describe(obj as KubeObject)
      }: a namespaced owner cannot own a cluster-scoped object`,
    );
  }
  if (ownerNs && objNs !== ownerNs) {
    throw new TypeError(
      `Cannot make ${describe(owner)} the controller of ${
        describe(obj as KubeObject)
      }: an owner must be in the same namespace`,
    );
  }
  const refs = [...(obj.metadata.ownerReferences ?? [])];
  const current = refs.findIndex((r) => r.controller === true);
  if (current >= 0 && refs[current].uid !== ref.uid) {
    const other = refs[current];
    throw new TypeError(
      `Cannot make ${describe(owner)} the controller of ${
        describe(obj as KubeObject)
      }: it is already controlled by ${other.kind} "${other.name}" (uid "${other.uid}")`,
    );
  }
  const same = refs.findIndex((r) => r.uid === ref.uid);
  if (same >= 0) refs[same] = ref;
  else refs.push(ref);
  obj.metadata.ownerReferences = refs;
  return obj as O & { metadata: { ownerReferences: OwnerReference[] } };
}

/**
 * The controller ownerReference of an object, if it has one.
 *
 * @param obj The object.
 * @returns The reference with `controller: true`, or `undefined`.
 *
 * @example Finding the controller
 * ```ts
 * import { controllerOf } from "./owner.ts";
 * const ref = { apiVersion: "v1", kind: "Secret", name: "s", uid: "u", controller: true };
 * if (controllerOf({ metadata: { name: "a", ownerReferences: [ref] } })?.name !== "s") {
 *   throw new Error();
 * }
 * ```
 */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true);
}

function describe(obj: KubeObject): string {
  const m = obj.metadata ?? {};
  const where = m.namespace ? ` in namespace "${m.namespace}"` : "";
  return `${obj.kind ?? "object"} "${m.name ?? m.generateName ?? ""}"${where}`;
}
