/**
 * Multi-version resources, as kubebuilder's book evolves an API: one version is the **hub**
 * (the one `defineResource` declares, which the API server stores and the controllers
 * reconcile), every other version a **spoke** that converts to and from the hub with two
 * functions written in TypeScript. The operator serves them as the CRD's conversion webhook
 * (`/convert` on its HTTPS webhook server).
 *
 * Flow of one conversion, from version A to version B: A → hub with A's `toHub` (nothing to
 * do when A is the hub), then hub → B with B's `fromHub`. `apiVersion`, `kind` and the
 * metadata the API server owns are set by kubeno; the functions deal with `spec` and
 * `status`.
 *
 * Guarantees: round trips are lossless. When `fromHub` drops something (a field the spoke
 * has no place for), kubeno keeps the hub's `spec` and `status` in the spoke object's
 * {@linkcode CONVERSION_DATA_ANNOTATION} annotation, as Cluster API does; `toHub` receives
 * them back as `restored` and copies what the spoke cannot express. The annotation is only
 * written when something would be lost, and never reaches the hub. The hub is never given an
 * object of a version it does not know: unknown versions and kinds fail the conversion with a
 * message naming them.
 *
 * Assumptions: the functions are pure and fast (the API server waits on them, for every
 * object of a list); they neither read the cluster nor keep state.
 *
 * Caveats: a spoke client that rewrites the whole object (a `kubectl replace` from a file
 * written before the hub gained a field) sends no annotation, so `restored` is `undefined`
 * and the hub-only fields take their defaults, exactly as with kubebuilder.
 *
 * Errors: a function that throws (or a version that does not exist) makes that conversion
 * fail: the API server answers the request with the message, the stored object is unchanged.
 * The API server converts a list or watch as a whole, so one stored object that does not
 * convert to a version fails every list of that version, for all objects. kubeno therefore
 * refuses, in the resource's validating webhook, a create or update whose object does not
 * convert to every served version (one line naming the version and the function's message),
 * and its conversion webhook logs an object that still fails (stored before that rule) once
 * per object and change, not once per retry; `migrate-storage` names such objects.
 *
 * Writing total conversions: a conversion should succeed for every object its source version
 * accepts. Where the target has no field for a value, do not throw: write what the target can
 * hold (a default, an empty list) and let kubeno keep the rest — `fromHub`'s dropped content
 * is in the {@linkcode CONVERSION_DATA_ANNOTATION} annotation and comes back to `toHub` as
 * `restored`. Throw only for values the source's own schema should have refused, and then
 * tighten that schema (a `regex`, an `enum`, a CEL rule) so that the API server refuses them
 * first.
 *
 * @module
 */
import type { ObjectMeta } from "../core/object.ts";
import type { ObjectOf, Resource } from "../core/resource.ts";
import { KubenoError } from "../util/error.ts";

/**
 * Annotation in which a spoke object keeps the hub's `spec` and `status` when the spoke
 * cannot hold all of it: JSON `{"apiVersion": "<hub>", "spec": ..., "status": ...}`.
 */
export const CONVERSION_DATA_ANNOTATION = "kubeno.dev/conversion-data";

/**
 * What a conversion function returns: the object's content at the target version.
 * `apiVersion` and `kind` are set by kubeno; `metadata` may be left out (the source's is
 * kept), and of a returned one only labels and annotations count, as the API server allows.
 *
 * @typeParam T The target version's object type.
 */
export type Converted<T> = Omit<T, "apiVersion" | "kind" | "metadata"> & {
  /** Labels and annotations of the result; the rest of the metadata is the source's. */
  metadata?: ObjectMeta;
};

/**
 * One more version of a resource, converted through the hub: an entry of
 * `defineResource({ versions: [...] })`.
 *
 * @typeParam R The version's own resource, from `defineResource` with the same group, kind,
 * plural and scope.
 * @typeParam Hub The hub's object type.
 */
export interface SpokeVersion<R extends Resource<any>, Hub> {
  /** The version's resource: its schema, printer columns and typed client access. */
  resource: R;
  /**
   * Whether the API server serves the version. Keep a version that still has stored objects
   * (see `status.storedVersions`) until the operator's `migrate-storage` has run.
   * @default true
   */
  served?: boolean;
  /**
   * Marks the version deprecated: each request at it gets a warning, which `kubectl` prints.
   * `true` uses the API server's text (`<group>/<version> <Kind> is deprecated`); a string is
   * the warning itself.
   * @default false
   */
  deprecated?: boolean | string;
  /**
   * Converts an object of this version to the hub.
   * @param object The object at this version (a copy, free to change).
   * @param restored The hub's content this object was last converted from, when it carries
   * it: copy from it what this version has no field for.
   * @returns The hub object's content.
   */
  toHub(object: ObjectOf<R>, restored: Hub | undefined): Converted<Hub>;
  /**
   * Converts a hub object to this version.
   * @param hub The hub object (a copy, free to change).
   * @returns This version's content.
   */
  fromHub(hub: Hub): Converted<ObjectOf<R>>;
}

/**
 * A conversion failed: a version or kind that the resource does not have, a malformed
 * object, or a conversion function that threw (its error is the `cause`).
 *
 * @example A version the resource does not have
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { defineResource } from "./define_resource.ts";
 * import { ConversionError } from "./conversion.ts";
 * const Widget = defineResource({
 *   group: "example.com", version: "v1", kind: "Widget", spec: z.object({ size: z.int() }),
 * });
 * try {
 *   Widget.convert({ apiVersion: "example.com/v1", kind: "Widget", metadata: {} }, "example.com/v2");
 *   throw new Error("converted");
 * } catch (e) {
 *   if (!(e instanceof ConversionError)) throw e;
 * }
 * ```
 */
export class ConversionError extends KubenoError {
  /** `"ConversionError"`. */
  override name = "ConversionError";
  /** `namespace/name` of the object, when known. */
  readonly object?: string;

  /**
   * Creates the error.
   *
   * @param message What failed, naming the versions.
   * @param object `namespace/name` of the object, when known.
   * @param options The conversion function's error as `cause`.
   */
  constructor(message: string, object?: string, options?: ErrorOptions) {
    super(message, options);
    this.object = object;
  }
}
