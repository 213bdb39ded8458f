/**
 * Metadata-only views of a kind: `metadataOnly(Pod)` addresses the same objects as `Pod` but
 * reads only their `metadata` (`PartialObjectMetadata`), as client-go's metadata client,
 * controller-runtime's `OnlyMetadata` and kube-rs's `metadata_watcher` do. A cache of Pods
 * or Secrets that only needs names, labels and owners then holds a fraction of the bytes.
 *
 * @module
 */
import type { KubeObject, ObjectMeta } from "./object.ts";
import type { Resource } from "./resource.ts";

/**
 * An object read through a metadata-only view: `apiVersion` and `kind` of the real kind and
 * its full `metadata`, nothing else (no `spec`, `status` or `data`).
 */
export interface PartialObjectMetadata extends KubeObject {
  /** Standard metadata, as complete as the full object's. */
  metadata: ObjectMeta;
}

/**
 * A metadata-only view of a kind, made by {@linkcode metadataOnly}: the same group, version,
 * kind and plural, typed by {@linkcode PartialObjectMetadata}.
 *
 * @typeParam T The object type of the full kind.
 */
export interface MetadataOnlyResource<T extends KubeObject = KubeObject>
  extends Resource<PartialObjectMetadata> {
  /** Always `true`: reads ask the API server for `PartialObjectMetadata`. */
  readonly metadataOnly: true;
  /** The full kind this is a view of. */
  readonly full: Resource<T>;
}

/** The `Accept` header of a metadata-only list (`PartialObjectMetadataList`). */
export const METADATA_LIST_ACCEPT =
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/** The `Accept` header of a metadata-only get or watch (`PartialObjectMetadata`). */
export const METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

const views = new WeakMap<Resource<any>, MetadataOnlyResource<any>>();

/**
 * The metadata-only view of a kind. Reads through it (`client.get`, `client.list`, watches,
 * informers and controller caches) get each object's metadata only; name it in `owns`,
 * `watches` or `reads` to cache a kind without its spec, status or data. Writes go through
 * the full kind. The same kind always gives the same view.
 *
 * @typeParam T The object type of the full kind.
 * @param res The full kind, e.g. `Pod`.
 * @returns The frozen view.
 * @throws {TypeError} When `res` is already a metadata-only view.
 *
 * @example A metadata-only view of ConfigMaps
 * ```ts
 * import { isMetadataOnly, metadataOnly } from "./metadata_only.ts";
 * import { ConfigMap } from "./kinds.ts";
 * const ConfigMapMeta = metadataOnly(ConfigMap);
 * if (ConfigMapMeta.plural !== "configmaps" || !isMetadataOnly(ConfigMapMeta)) throw new Error();
 * if (metadataOnly(ConfigMap) !== ConfigMapMeta || ConfigMapMeta.full !== ConfigMap) throw new Error();
 * ```
 */
export function metadataOnly<T extends KubeObject>(res: Resource<T>): MetadataOnlyResource<T> {
  if (isMetadataOnly(res)) {
    throw new TypeError(`Cannot make a metadata-only view of ${res.kind}: it is one already`);
  }
  let view = views.get(res);
  if (!view) {
    view = Object.freeze({
      group: res.group,
      version: res.version,
      kind: res.kind,
      plural: res.plural,
      namespaced: res.namespaced,
      apiVersion: res.apiVersion,
      metadataOnly: true as const,
      full: res,
    });
    views.set(res, view);
  }
  return view;
}

/**
 * Whether a resource is a metadata-only view made by {@linkcode metadataOnly}.
 *
 * @param res Any resource.
 * @returns `true` for a metadata-only view.
 *
 * @example Telling views apart
 * ```ts
 * import { isMetadataOnly, metadataOnly } from "./metadata_only.ts";
 * import { Pod } from "./kinds.ts";
 * if (isMetadataOnly(Pod) || !isMetadataOnly(metadataOnly(Pod))) throw new Error();
 * ```
 */
export function isMetadataOnly(res: Resource<any>): res is MetadataOnlyResource<any> {
  return (res as { metadataOnly?: unknown }).metadataOnly === true;
}
