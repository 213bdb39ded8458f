/**
 * The option and result types of kubeno's {@link Client}: lists, watch events, patches and
 * the options of each operation.
 *
 * @module
 */
import type { Status } from "./errors/api_error.ts";
import type { ObjectMeta } from "../core/object.ts";

export type { Status };

/** A page of objects as the API server lists them; each item carries `apiVersion` and `kind`. */
export interface ObjectList<T> {
  /** `group/version` of the list, e.g. `v1`. */
  apiVersion?: string;
  /** Kind of the list, e.g. `ConfigMapList`. */
  kind?: string;
  /** List metadata. */
  metadata: {
    /** The resourceVersion the list is consistent with; start a watch from it. */
    resourceVersion?: string;
    /** Token for the next page; absent or empty on the last page. */
    continue?: string;
    /** Objects left after this page, when the server can tell. */
    remainingItemCount?: number;
    /**
     * The shard selector the server applied (KEP-5866), echoed back when the request carried
     * `shardSelector` and the server filtered by it; absent from servers without the
     * `ShardedListAndWatch` feature, which ignore the selector and return every object.
     */
    shardInfo?: ShardInfo;
  };
  /** The objects. */
  items: T[];
}

/** A page of a list, read from the server but not decoded yet (`Client.listPage`). */
export interface ListPage<T> {
  /**
   * The page's list metadata (`continue`, `resourceVersion`), read from the head of the body
   * without decoding the items; absent when the body does not begin with it, and then only
   * `decode()` tells.
   */
  metadata: ObjectList<T>["metadata"] | undefined;
  /** Decodes the page; each item gets `apiVersion` and `kind`. */
  decode(): ObjectList<T>;
}

/** `ListMeta.shardInfo`: the shard selector a list response was filtered by. */
export interface ShardInfo {
  /** The selector as the server understood it, e.g. `shardRange(object.metadata.uid, '0x…', '0x…')`. */
  selector: string;
}

/**
 * One event of a watch stream, as the API server sends it. `ERROR` carries a `Status`, e.g.
 * code 410 when the requested resourceVersion is too old.
 */
export type RawWatchEvent<T> =
  | { type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK"; object: T }
  | { type: "ERROR"; object: Status };

/** One operation of a JSON patch (RFC 6902). */
export type JsonPatchOperation =
  | { op: "add" | "replace" | "test"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "move" | "copy"; from: string; path: string };

/** A JSON merge patch (RFC 7386) for `T`: any subset of its fields; `null` deletes a field. */
export type MergePatch<T> = T extends readonly unknown[] ? T
  : T extends object ? { [K in keyof T]?: MergePatch<T[K]> | null }
  : T;

/**
 * What server-side apply takes: the fields this manager owns, with `metadata.name` set.
 * `apiVersion` and `kind` are filled in from the resource when missing.
 */
export type ApplyObject<T> =
  & { apiVersion?: string; kind?: string; metadata: ObjectMeta & { name: string } }
  & MergePatch<Omit<T, "apiVersion" | "kind" | "metadata">>;

/** Options of operations on one object by name. */
export interface ObjectOptions {
  /**
   * Namespace of a namespaced object; ignored for cluster-scoped ones.
   * @default the object's `metadata.namespace`, then the client's namespace
   */
  namespace?: string;
  /** Cancels the request. */
  signal?: AbortSignal;
}

/** Options of `list`. */
export interface ListOptions {
  /**
   * Namespace to list in.
   * @default all namespaces
   */
  namespace?: string;
  /** Label selector, e.g. `app=web,tier!=db`. */
  labelSelector?: string;
  /** Field selector, e.g. `metadata.name=foo`. */
  fieldSelector?: string;
  /**
   * Shard selector (KEP-5866, Kubernetes 1.36+ with the `ShardedListAndWatch` feature), e.g.
   * `shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`: only
   * objects whose 64-bit FNV-1a hash of the field falls in a range. The response's
   * `metadata.shardInfo` says whether the server applied it; other servers ignore it.
   */
  shardSelector?: string;
  /**
   * Maximum number of objects in the page; the server returns a `continue` token when there
   * are more.
   * @default no limit
   */
  limit?: number;
  /** Continue token of the previous page. */
  continue?: string;
  /** List as of this resourceVersion (`"0"`: any cached state). */
  resourceVersion?: string;
  /** How `resourceVersion` applies: `Exact` or `NotOlderThan`. */
  resourceVersionMatch?: "Exact" | "NotOlderThan";
  /** Cancels the request. */
  signal?: AbortSignal;
}

/** Options of `watchEvents`. */
export interface RawWatchOptions {
  /**
   * Namespace to watch.
   * @default all namespaces
   */
  namespace?: string;
  /** Label selector. */
  labelSelector?: string;
  /** Field selector. */
  fieldSelector?: string;
  /** Shard selector, as for lists; servers without the feature ignore it. */
  shardSelector?: string;
  /** Start after this resourceVersion; absent: synthetic ADDED events for current objects. */
  resourceVersion?: string;
  /**
   * Ask for BOOKMARK events that advance the resourceVersion.
   * @default false
   */
  allowWatchBookmarks?: boolean;
  /** Server-side timeout after which the server ends the stream. */
  timeoutSeconds?: number;
  /**
   * Stream the current objects as `ADDED` events first (the watch-list of KEP-3157), ended
   * by a `BOOKMARK` annotated `k8s.io/initial-events-end: "true"`; needs
   * `allowWatchBookmarks` and `resourceVersionMatch: "NotOlderThan"`. Servers without the
   * `WatchList` feature reject it (422).
   * @default false
   */
  sendInitialEvents?: boolean;
  /** How `resourceVersion` applies; a watch allows only `NotOlderThan`, with `sendInitialEvents`. */
  resourceVersionMatch?: "NotOlderThan";
  /** Aborts the request; the iteration then throws the signal's reason. */
  signal?: AbortSignal;
  /**
   * Called once the response headers arrived (the watch is established), before any event;
   * a watch that fails before that never connected.
   */
  onConnected?: () => void;
}

/** Options shared by every write. */
export interface WriteOptions extends ObjectOptions {
  /**
   * Validate and run admission without persisting anything.
   * @default false
   */
  dryRun?: boolean;
  /**
   * Field manager recorded in `managedFields`.
   * @default the client's `fieldManager`
   */
  fieldManager?: string;
  /**
   * How the server treats unknown or duplicate fields.
   * @default the server's default (`Warn`)
   */
  fieldValidation?: "Strict" | "Warn" | "Ignore";
}

/** Options of `patch` and `patchStatus`. */
export interface PatchOptions extends WriteOptions {
  /**
   * `merge` (RFC 7386 JSON merge patch), `json` (RFC 6902 JSON patch) or `strategic`
   * (strategic merge patch; built-in kinds only).
   * @default "merge"
   */
  type?: "merge" | "json" | "strategic";
}

/** Options of `apply` and `applyStatus`. */
export interface ApplyOptions extends WriteOptions {
  /**
   * Take ownership of fields other managers own instead of failing with 409 Conflict.
   * @default false
   */
  force?: boolean;
}

/** Options of `delete`. */
export interface DeleteOptions extends ObjectOptions {
  /**
   * What happens to dependents: `Background`, `Foreground` or `Orphan`.
   * @default the resource's default (usually `Background`)
   */
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  /** Delete only if the object still has this uid and/or resourceVersion (else 409). */
  preconditions?: { uid?: string; resourceVersion?: string };
  /** Seconds of graceful termination; 0 deletes immediately. */
  gracePeriodSeconds?: number;
  /**
   * Validate without deleting.
   * @default false
   */
  dryRun?: boolean;
}
