/**
 * kubeno: write Kubernetes operators in TypeScript on Deno.
 *
 * A resource is described once (`defineResource`, or a built-in kind such as `Deployment`);
 * `reconcile(resource, {...})` turns it into a level-based controller running on shared
 * informer caches; `operator({...}).main()` is the program's command line, which also installs
 * its own CRDs. Start with `reconcile`.
 *
 * @example Describe a kind that already exists on the server
 * ```ts
 * import { resource } from "./mod.ts";
 * const Widgets = resource({ group: "example.com", version: "v1", kind: "Widget" });
 * if (Widgets.plural !== "widgets") throw new Error();
 * ```
 *
 * @module
 */
export type {
  Condition,
  KubeObject,
  ManagedFieldsEntry,
  ObjectMeta,
  ObjectRef,
  OwnerReference,
} from "./src/object.ts";
export {
  gvkString,
  type ObjectOf,
  pluralize,
  type Resource,
  resource,
  type ResourceInit,
} from "./src/resource.ts";
