/**
 * The kind key: a string that names one kind (its `apiVersion` and `kind`) and whether it
 * is read in full or metadata-only, for maps of per-kind caches, informers and writes. This
 * module is the one place that builds a kind key and the one place that takes it apart.
 *
 * @module
 */
import { isMetadataOnly } from "./metadata_only.ts";
import type { Resource } from "./resource.ts";

// NUL cannot occur in an apiVersion or a kind.
const SEP = "\u0000";

/** Options of {@linkcode kindKey}. */
export interface KindKeyOptions {
  /**
   * Key the kind's metadata-only view (`true`) or the full kind (`false`); `false` for
   * either view names the kind whichever way it is read.
   * @default whether `res` is a metadata-only view
   */
  metadataOnly?: boolean;
}

/** A kind key taken apart by {@linkcode parseKindKey}. */
export interface ParsedKindKey {
  /** The kind's `apiVersion`, e.g. `apps/v1`. */
  apiVersion: string;
  /** The kind, e.g. `Deployment`. */
  kind: string;
  /** Whether the key names the metadata-only view. */
  metadataOnly: boolean;
}

/**
 * The key of a kind: its `apiVersion`, its `kind` and its view (full or metadata-only), so
 * that a kind cached both ways has two keys.
 *
 * @param res The kind, full or `metadataOnly(...)`.
 * @param options Which view to key.
 * @returns The key.
 *
 * @example Full and metadata-only keys
 * ```ts
 * import { kindKey } from "./kind_key.ts";
 * import { metadataOnly } from "./metadata_only.ts";
 * import { ConfigMap } from "./kinds.ts";
 * const meta = metadataOnly(ConfigMap);
 * if (kindKey(ConfigMap) === kindKey(meta)) throw new Error("the views have their own keys");
 * if (kindKey(meta, { metadataOnly: false }) !== kindKey(ConfigMap)) throw new Error();
 * ```
 */
export function kindKey(res: Resource<any>, options?: KindKeyOptions): string {
  const meta = options?.metadataOnly ?? isMetadataOnly(res);
  return `${res.apiVersion}${SEP}${res.kind}${SEP}${meta ? "metadata" : "full"}`;
}

/**
 * What a key from {@linkcode kindKey} names: the inverse of it.
 *
 * @param key A key built by {@linkcode kindKey}.
 * @returns The apiVersion, kind and view.
 * @throws {TypeError} When `key` was not built by {@linkcode kindKey}.
 *
 * @example Naming a kind in a log line
 * ```ts
 * import { kindKey, parseKindKey } from "./kind_key.ts";
 * import { Deployment } from "./kinds_workloads.ts";
 * const { apiVersion, kind, metadataOnly } = parseKindKey(kindKey(Deployment));
 * if (apiVersion !== "apps/v1" || kind !== "Deployment" || metadataOnly) throw new Error();
 * ```
 */
export function parseKindKey(key: string): ParsedKindKey {
  const [apiVersion, kind, view, ...rest] = key.split(SEP);
  if (!kind || (view !== "full" && view !== "metadata") || rest.length) {
    throw new TypeError(`Cannot parse kind key ${JSON.stringify(key)}: it is not from kindKey()`);
  }
  return { apiVersion, kind, metadataOnly: view === "metadata" };
}
