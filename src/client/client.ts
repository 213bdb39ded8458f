/**
 * kubeno's Kubernetes client: typed reads and writes for any {@link Resource} (built-in kinds
 * and custom resources alike), server-side apply, the `status` subresource, paged lists and
 * the raw watch stream the watch layer builds on.
 *
 * It authenticates with what the kubeconfig (or the in-cluster service account) names, read
 * natively by `kubeconfig.ts`, and talks HTTP with Deno's own `fetch`.
 *
 * Errors: {@link ApiError} for every non-2xx answer, {@link ConnectionError} when the server
 * cannot be reached, {@link KubeconfigError} when the configuration is unusable.
 *
 * @module
 */
import {
  type ExecOptions,
  type LogOptions,
  podAttach,
  podExec,
  podLogs,
  podPortForward,
  type PodStream,
  type PortForward,
  type PortForwardOptions,
} from "./pod_streams.ts";
import { ApiError, type ApiErrorTarget, ConnectionError, type Status } from "./errors/api_error.ts";
import { parseNdjsonBatches } from "./_ndjson.ts";
import { type RequestMetric, type RequestSpec, Transport } from "./transport/transport.ts";
import { queryString, resourcePath } from "./_url.ts";
import { type ClusterAccess, loadKubeconfig } from "./kubeconfig/kubeconfig.ts";
import type { KubeObject } from "../core/object.ts";
import type { Resource } from "../core/resource.ts";
import { isMetadataOnly, METADATA_ACCEPT, METADATA_LIST_ACCEPT } from "../core/metadata_only.ts";
import type {
  ApplyObject,
  ApplyOptions,
  DeleteOptions,
  JsonPatchOperation,
  ListOptions,
  ListPage,
  MergePatch,
  ObjectList,
  ObjectOptions,
  PatchOptions,
  RawWatchEvent,
  RawWatchOptions,
  WriteOptions,
} from "./types.ts";

// The watch layer's contract types, also importable from here.
export type { ListPage, ObjectList, RawWatchEvent, Status };

/**
 * The `metadata` object at the head of a list body — the API server writes `kind`,
 * `apiVersion`, `metadata`, then `items` — without parsing the items; `undefined` when the
 * body does not begin that way.
 */
export function peekListMetadata(text: string): ObjectList<unknown>["metadata"] | undefined {
  const head = text.slice(0, 8192);
  const at = head.indexOf('"metadata":');
  const items = head.indexOf('"items":');
  if (at < 0 || (items >= 0 && items < at)) return undefined;
  const start = at + '"metadata":'.length;
  if (head[start] !== "{") return undefined;
  let depth = 0;
  let inString = false;
  for (let i = start; i < head.length; i++) {
    const c = head[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) {
      try {
        return JSON.parse(head.slice(start, i + 1));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
export type { RequestMetric };

/** Options of {@link createClient}. */
export interface ClientOptions {
  /**
   * Path of the kubeconfig file.
   * @default `KUBECONFIG`, then `~/.kube/config`, then the in-cluster service account
   */
  kubeconfig?: string;
  /**
   * Kubeconfig context to use.
   * @default the kubeconfig's `current-context`
   */
  context?: string;
  /**
   * Field manager recorded for writes and used by server-side apply.
   * @default "kubeno"
   */
  fieldManager?: string;
  /**
   * `User-Agent` header.
   * @default "kubeno/<version> deno/<version>"
   */
  userAgent?: string;
  /**
   * Deadline in milliseconds for each request except watches.
   * @default 60000
   */
  timeoutMs?: number;
  /** Called after each request with method, verb, host, status code and latency. */
  onRequest?: (metric: RequestMetric) => void;
}

const PATCH_TYPES = {
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
  strategic: "application/strategic-merge-patch+json",
} as const;

/**
 * A client for one API server and identity. Create it with {@link createClient}; close it
 * (or `using` it) to release its HTTP connections.
 *
 * Namespaces: single-object operations use `options.namespace`, else the object's
 * `metadata.namespace`, else the client's `namespace` (the context's, or `default`); `list`
 * and `watchEvents` without a namespace cover all namespaces.
 *
 * @example Read, apply and watch
 * ```ts ignore — needs a live API server
 * import { createClient } from "./client.ts";
 * import { isNotFound } from "./errors/api_error.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 *
 * using client = await createClient({ fieldManager: "my-operator" });
 * const cm = await client.get(ConfigMap, "settings").catch((e) => {
 *   if (isNotFound(e)) return undefined;
 *   throw e;
 * });
 * await client.apply(ConfigMap, { metadata: { name: "settings" }, data: { mode: "fast" } });
 * for await (const ev of client.watchEvents(ConfigMap, { namespace: "default" })) {
 *   if (ev.type === "ERROR") break;
 *   console.log(ev.type, ev.object.metadata.name, cm?.data);
 * }
 * ```
 */
export class Client implements Disposable {
  #transport: Transport;
  #fieldManager: string;
  /** The API server's base URL. */
  readonly server: string;
  /** The default namespace: the kubeconfig context's, or `default`. */
  readonly namespace: string;

  /**
   * Use {@link createClient}; this is for wrappers that resolved access themselves.
   *
   * @param access The resolved kubeconfig context.
   * @param options Client options.
   */
  constructor(access: ClusterAccess, options: ClientOptions = {}) {
    this.server = access.server;
    this.namespace = access.namespace;
    this.#fieldManager = options.fieldManager ?? "kubeno";
    this.#transport = new Transport(access, {
      userAgent: options.userAgent ?? `kubeno/0.1.0 deno/${Deno.version.deno}`,
      timeoutMs: options.timeoutMs ?? 60_000,
      onRequest: options.onRequest,
    });
  }

  /** The default field manager for writes. */
  get fieldManager(): string {
    return this.#fieldManager;
  }

  /**
   * Reads one object.
   *
   * @param res The resource.
   * @param name The object's name.
   * @param options Namespace and signal.
   * @returns The object.
   * @throws {ApiError} E.g. `isNotFound(err)` when it does not exist.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  get<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    options: ObjectOptions = {},
  ): Promise<T> {
    return this.#object(res, "get", name, options, "");
  }

  /**
   * Reads one object through its `status` subresource.
   *
   * @param res The resource.
   * @param name The object's name.
   * @param options Namespace and signal.
   * @returns The object.
   * @throws {ApiError} When it does not exist or the resource has no status subresource.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  getStatus<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    options: ObjectOptions = {},
  ): Promise<T> {
    return this.#object(res, "get", name, options, "status");
  }

  /**
   * Lists one page of objects. Each item has `apiVersion` and `kind` filled in.
   *
   * @param res The resource.
   * @param options Namespace, selectors, paging and resourceVersion.
   * @returns The page; `metadata.continue` is set when more pages follow.
   * @throws {ApiError} E.g. `isForbidden(err)`, or `isGone(err)` for an expired continue token.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  async list<T extends KubeObject>(
    res: Resource<T>,
    options: ListOptions = {},
  ): Promise<ObjectList<T>> {
    return (await this.listPage(res, options)).decode();
  }

  /**
   * Lists one page of objects and reads it, leaving the items undecoded: the page's list
   * metadata (its `continue` token) is known before they are, so that the next page can be
   * requested while this one is decoded — what `watch()` does while it syncs.
   *
   * @param res The resource.
   * @param options As for {@link Client.list}.
   * @returns The page, read.
   * @throws {ApiError} E.g. `isForbidden(err)`, or `isGone(err)` for an expired continue token.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  async listPage<T extends KubeObject>(
    res: Resource<T>,
    options: ListOptions = {},
  ): Promise<ListPage<T>> {
    const path = resourcePath(res, { namespace: options.namespace }) + queryString({
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
      shardSelector: options.shardSelector,
      limit: options.limit,
      continue: options.continue,
      resourceVersion: options.resourceVersion,
      resourceVersionMatch: options.resourceVersionMatch,
    });
    const spec: RequestSpec = {
      method: "GET",
      path,
      // A metadata-only view (`metadataOnly(Pod)`) asks for PartialObjectMetadataList.
      ...(isMetadataOnly(res) ? { accept: METADATA_LIST_ACCEPT } : {}),
      target: target(res, "list", { namespace: res.namespaced ? options.namespace : undefined }),
      signal: options.signal,
    };
    const text = await this.#transport.text(spec);
    return {
      metadata: peekListMetadata(text),
      decode: () => {
        const list = this.#transport.parse<ObjectList<T>>(spec, text);
        list.items ??= [];
        list.metadata ??= {};
        for (const item of list.items) {
          item.apiVersion = res.apiVersion;
          item.kind = res.kind;
        }
        return list;
      },
    };
  }

  /**
   * Lists every object page by page, following `continue` tokens.
   *
   * @param res The resource.
   * @param options As for {@link Client.list}; `limit` is the page size.
   * @returns The pages, in order. All share the first page's resourceVersion.
   * @throws {ApiError} E.g. `isGone(err)` when a continue token expires mid-way.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  async *listPages<T extends KubeObject>(
    res: Resource<T>,
    options: ListOptions = {},
  ): AsyncGenerator<ObjectList<T>, void, undefined> {
    const pageOptions = { ...options, limit: options.limit ?? 500 };
    for (;;) {
      const page = await this.list(res, pageOptions);
      yield page;
      if (!page.metadata.continue) return;
      pageOptions.continue = page.metadata.continue;
    }
  }

  /**
   * Lists every object, fetching pages of `limit` (default 500) and concatenating them. If a
   * continue token expires mid-way (410 Gone), lists once more without paging, as client-go's
   * pager does.
   *
   * @param res The resource.
   * @param options As for {@link Client.list}.
   * @returns One list holding every object and the resourceVersion to watch from.
   * @throws {ApiError} When a request fails.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  async listAll<T extends KubeObject>(
    res: Resource<T>,
    options: ListOptions = {},
  ): Promise<ObjectList<T>> {
    let first: ObjectList<T> | undefined;
    const items: T[] = [];
    try {
      for await (const page of this.listPages(res, options)) {
        first ??= page;
        for (const item of page.items) items.push(item);
      }
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 410 && first)) throw e;
      return await this.list(res, { ...options, limit: undefined, continue: undefined });
    }
    return {
      apiVersion: first?.apiVersion,
      kind: first?.kind,
      metadata: { resourceVersion: first?.metadata.resourceVersion },
      items,
    };
  }

  /**
   * Creates an object. `apiVersion` and `kind` are filled in from the resource when missing.
   *
   * @param res The resource.
   * @param obj The object; `metadata.name` or `metadata.generateName` must be set.
   * @param options Namespace, dryRun, fieldManager, fieldValidation, signal.
   * @returns The object as stored.
   * @throws {ApiError} E.g. `isAlreadyExists(err)` or `isInvalid(err)`.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  create<T extends KubeObject>(res: Resource<T>, obj: T, options: WriteOptions = {}): Promise<T> {
    const namespace = this.#namespace(res, options, obj);
    return this.#transport.json<T>({
      method: "POST",
      path: resourcePath(res, { namespace }) + writeQuery(this, options),
      body: withTypeMeta(res, obj),
      target: target(res, "create", { namespace, name: obj.metadata?.name }),
      signal: options.signal,
    });
  }

  /**
   * Replaces an object (HTTP PUT). With `metadata.resourceVersion` set, fails with 409
   * Conflict when the object changed since it was read. The `status` is ignored by resources
   * with a status subresource.
   *
   * @param res The resource.
   * @param obj The whole object, `metadata.name` set.
   * @param options Namespace, dryRun, fieldManager, fieldValidation, signal.
   * @returns The object as stored.
   * @throws {ApiError} E.g. `isConflict(err)` or `isNotFound(err)`.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  replace<T extends KubeObject>(res: Resource<T>, obj: T, options: WriteOptions = {}): Promise<T> {
    return this.#put(res, obj, options, "");
  }

  /**
   * Replaces an object's `status` through the status subresource; the spec is left alone.
   *
   * @param res The resource.
   * @param obj The whole object with the new status.
   * @param options Namespace, dryRun, fieldManager, fieldValidation, signal.
   * @returns The object as stored.
   * @throws {ApiError} E.g. `isConflict(err)`.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  replaceStatus<T extends KubeObject>(
    res: Resource<T>,
    obj: T,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.#put(res, obj, options, "status");
  }

  /**
   * Patches an object with a merge patch (default), a JSON patch or a strategic merge patch.
   *
   * @param res The resource.
   * @param name The object's name.
   * @param patch A merge patch object, or JSON patch operations with `type: "json"`.
   * @param options Patch type, namespace, dryRun, fieldManager, signal.
   * @returns The object as stored.
   * @throws {ApiError} E.g. `isNotFound(err)`, or `isInvalid(err)` for a failed JSON patch test.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  patch<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    patch: MergePatch<T> | JsonPatchOperation[],
    options: PatchOptions = {},
  ): Promise<T> {
    return this.#patch(res, name, patch, options, "");
  }

  /**
   * Patches an object's status subresource.
   *
   * @param res The resource.
   * @param name The object's name.
   * @param patch A merge patch such as `{ status: { phase: "Running" } }`, or JSON patch
   * operations with `type: "json"`.
   * @param options Patch type, namespace, dryRun, fieldManager, signal.
   * @returns The object as stored.
   * @throws {ApiError} E.g. `isNotFound(err)`.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  patchStatus<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    patch: MergePatch<T> | JsonPatchOperation[],
    options: PatchOptions = {},
  ): Promise<T> {
    return this.#patch(res, name, patch, options, "status");
  }

  /**
   * Server-side apply: makes the fields in `obj` owned by the field manager and equal to
   * these values, creating the object if needed. Fields the manager applied before and now
   * leaves out are removed.
   *
   * @param res The resource.
   * @param obj The fields this manager owns, `metadata.name` set.
   * @param options `force`, fieldManager, namespace, dryRun, signal.
   * @returns The object as stored.
   * @throws {ApiError} `isConflict(err)` when another manager owns a changed field and
   * `force` is not set; the conflicting fields are in `err.causes`.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  apply<T extends KubeObject>(
    res: Resource<T>,
    obj: ApplyObject<T>,
    options: ApplyOptions = {},
  ): Promise<T> {
    return this.#apply(res, obj, options, "");
  }

  /**
   * Server-side apply to the status subresource.
   *
   * @param res The resource.
   * @param obj `apiVersion`, `kind`, `metadata.name` and the `status` fields owned.
   * @param options `force`, fieldManager, namespace, dryRun, signal.
   * @returns The object as stored.
   * @throws {ApiError} `isConflict(err)` on a field conflict without `force`.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  applyStatus<T extends KubeObject>(
    res: Resource<T>,
    obj: ApplyObject<T>,
    options: ApplyOptions = {},
  ): Promise<T> {
    return this.#apply(res, obj, options, "status");
  }

  /**
   * Deletes an object.
   *
   * @param res The resource.
   * @param name The object's name.
   * @param options Propagation policy, preconditions, grace period, dryRun, namespace, signal.
   * @returns The object when the server returned it (e.g. deletion pending on finalizers),
   * otherwise `undefined`.
   * @throws {ApiError} `isNotFound(err)` when it does not exist, `isConflict(err)` when a
   * precondition fails.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  async delete<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    options: DeleteOptions = {},
  ): Promise<T | undefined> {
    const namespace = this.#namespace(res, options);
    const body: Record<string, unknown> = { apiVersion: "v1", kind: "DeleteOptions" };
    if (options.propagationPolicy) body.propagationPolicy = options.propagationPolicy;
    if (options.preconditions) body.preconditions = options.preconditions;
    if (options.gracePeriodSeconds !== undefined) {
      body.gracePeriodSeconds = options.gracePeriodSeconds;
    }
    if (options.dryRun) body.dryRun = ["All"];
    const out = await this.#transport.json<T | Status>({
      method: "DELETE",
      path: resourcePath(res, { namespace, name }),
      body,
      target: target(res, "delete", { namespace, name }),
      signal: options.signal,
    });
    return out.kind === "Status" ? undefined : out as T;
  }

  /**
   * Opens one watch request (`GET ...?watch=1`) and yields its events as they arrive. The
   * iteration ends when the server closes the stream. Stopping early (`break`, `return()`)
   * or aborting `signal` cancels the request and releases its connection. No reconnection:
   * that is the watch layer's job.
   *
   * @param res The resource.
   * @param options Namespace, selectors, resourceVersion, bookmarks, timeout, initial
   * events (watch-list), signal.
   * @returns The events, `ERROR` ones included (e.g. code 410 for an expired resourceVersion).
   * @throws {ApiError} When the response is not 2xx.
   * @throws {ConnectionError} When the server cannot be reached or the stream breaks.
   * @throws The signal's reason when `signal` aborts.
   */
  async *watchEvents<T extends KubeObject>(
    res: Resource<T>,
    options: RawWatchOptions = {},
  ): AsyncGenerator<RawWatchEvent<T>, void, undefined> {
    for await (const batch of this.watchEventBatches(res, options)) yield* batch;
  }

  /**
   * Opens one watch request, as {@linkcode Client.watchEvents} does, and yields its events
   * in batches: every event that arrived whole in one read of the stream, in order. A
   * watch-list's initial events come tens to a page of the response, so a consumer that
   * takes a batch in one synchronous loop pays one promise per batch instead of one per
   * event.
   *
   * @param res The resource.
   * @param options As for {@linkcode Client.watchEvents}.
   * @returns The events in batches, never empty, `ERROR` ones included.
   * @throws {ApiError} When the response is not 2xx.
   * @throws {ConnectionError} When the server cannot be reached or the stream breaks.
   * @throws The signal's reason when `signal` aborts.
   */
  async *watchEventBatches<T extends KubeObject>(
    res: Resource<T>,
    options: RawWatchOptions = {},
  ): AsyncGenerator<RawWatchEvent<T>[], void, undefined> {
    const outer = options.signal;
    outer?.throwIfAborted();
    const controller = new AbortController();
    const onAbort = () => controller.abort(outer?.reason);
    outer?.addEventListener("abort", onAbort, { once: true });
    const spec: RequestSpec = {
      method: "GET",
      path: resourcePath(res, { namespace: options.namespace }) + queryString({
        watch: 1,
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        shardSelector: options.shardSelector,
        resourceVersion: options.resourceVersion,
        allowWatchBookmarks: options.allowWatchBookmarks,
        timeoutSeconds: options.timeoutSeconds,
        sendInitialEvents: options.sendInitialEvents,
        resourceVersionMatch: options.resourceVersionMatch,
      }),
      ...(isMetadataOnly(res) ? { accept: METADATA_ACCEPT } : {}),
      acceptEncoding: "identity",
      target: target(res, "watch", { namespace: res.namespaced ? options.namespace : undefined }),
      signal: controller.signal,
      timeoutMs: null,
    };
    // PartialObjectMetadata events name meta.k8s.io; give them the real kind, as lists do.
    const typed = isMetadataOnly(res);
    try {
      const body = await this.#transport.stream(spec);
      options.onConnected?.();
      try {
        for await (const batch of parseNdjsonBatches(body)) {
          const events = batch as RawWatchEvent<T>[];
          if (typed) {
            for (const ev of events) {
              if (ev.type !== "BOOKMARK" && ev.type !== "ERROR" && ev.object) {
                ev.object.apiVersion = res.apiVersion;
                ev.object.kind = res.kind;
              }
            }
          }
          yield events;
        }
      } catch (e) {
        if (e instanceof SyntaxError && !controller.signal.aborted) {
          throw new ConnectionError(
            this.server,
            "watch",
            new Error(`malformed event: ${e.message}`),
          );
        }
        throw this.#transport.networkError(spec, e);
      }
    } finally {
      outer?.removeEventListener("abort", onAbort);
      // Releases the connection when the consumer stops early; a no-op after a clean end.
      controller.abort();
    }
  }

  /**
   * Sends a request to any API path and returns the parsed JSON, for what the typed
   * operations do not cover (discovery, `/version`, other subresources).
   *
   * @param method HTTP method.
   * @param path Path and query, e.g. `/version`.
   * @param options Body, content type and signal.
   * @returns The parsed response body.
   * @throws {ApiError} For a non-2xx response.
   * @throws {ConnectionError} When the server cannot be reached.
   */
  request<R = unknown>(
    method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
    path: string,
    options: { body?: unknown; contentType?: string; signal?: AbortSignal } = {},
  ): Promise<R> {
    return this.#transport.json<R>({
      method,
      path,
      body: options.body,
      contentType: options.contentType,
      target: { verb: method.toLowerCase(), kind: path, apiVersion: "", plural: path },
      signal: options.signal,
    });
  }

  /**
   * Streams a container's log line by line; with `follow`, until the container ends or
   * `signal` aborts.
   *
   * @param namespace The pod's namespace.
   * @param pod The pod's name.
   * @param options Container, follow, tailLines, sinceSeconds, timestamps, previous, signal.
   * @returns The lines.
   * @throws {ApiError} When the API server refuses.
   *
   * @example Follow a log
   * ```ts ignore — needs a live API server and a running pod
   * import { createClient } from "./client.ts";
   * using client = await createClient();
   * for await (const line of client.logs("default", "web-0", { follow: true })) console.log(line);
   * ```
   */
  logs(
    namespace: string,
    pod: string,
    options?: LogOptions,
  ): AsyncGenerator<string, void, undefined> {
    return podLogs(this.#transport, namespace, pod, options);
  }

  /**
   * Runs a command in a container over WebSocket (`v5.channel.k8s.io`, falling back to
   * `v4.channel.k8s.io`), with the kubeconfig's credentials.
   *
   * @param namespace The pod's namespace.
   * @param pod The pod's name.
   * @param command The command and its arguments.
   * @param options Container, stdin, stdout, stderr, tty, subprotocols.
   * @returns The session: stdout, stderr, stdin and the result from the status channel.
   * @throws {ConnectionError} When the handshake fails.
   *
   * @example Run a command
   * ```ts ignore — needs a live API server and a running pod
   * import { createClient } from "./client.ts";
   * using client = await createClient();
   * const s = await client.exec("default", "db-0", ["pg_dump", "app"]);
   * const dump = await new Response(s.stdout).text();
   * if ((await s.result).exitCode !== 0) throw new Error("pg_dump failed");
   * ```
   */
  exec(
    namespace: string,
    pod: string,
    command: readonly string[],
    options?: ExecOptions,
  ): Promise<PodStream> {
    return podExec(this.#transport, namespace, pod, command, options);
  }

  /**
   * Attaches to a container's process over WebSocket, like {@linkcode Client.exec}.
   *
   * @param namespace The pod's namespace.
   * @param pod The pod's name.
   * @param options Container, stdin, stdout, stderr, tty, subprotocols.
   * @returns The session.
   * @throws {ConnectionError} When the handshake fails.
   */
  attach(namespace: string, pod: string, options?: ExecOptions): Promise<PodStream> {
    return podAttach(this.#transport, namespace, pod, options);
  }

  /**
   * Forwards a local port to a pod's port; each connection gets its own WebSocket.
   *
   * @param namespace The pod's namespace.
   * @param pod The pod's name.
   * @param remotePort The pod's port.
   * @param options Local port and address.
   * @returns The listener; `close()` stops it.
   */
  portForward(
    namespace: string,
    pod: string,
    remotePort: number,
    options?: PortForwardOptions,
  ): PortForward {
    return podPortForward(this.#transport, namespace, pod, remotePort, options);
  }

  /**
   * Drops the client's pooled connections and keeps the client usable; the next request
   * opens a new connection. `watch()` calls it after detecting a stalled stream, because the
   * restarted watch would otherwise reuse a pooled keep-alive connection on the same dead path.
   *
   * @example Start over on fresh connections
   * ```ts
   * import { createClient } from "./client.ts";
   * const dir = await Deno.makeTempDir();
   * await Deno.writeTextFile(`${dir}/config`, JSON.stringify({
   *   apiVersion: "v1", kind: "Config", "current-context": "c",
   *   clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
   *   users: [{ name: "u", user: { token: "t" } }],
   *   contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
   * }));
   * const client = await createClient({ kubeconfig: `${dir}/config` });
   * client.resetConnections();
   * client.close();
   * ```
   */
  resetConnections(): void {
    this.#transport.resetConnections();
  }

  /** Closes the client's HTTP connections; open watches end with an error. */
  close(): void {
    this.#transport.close();
  }

  /** Same as {@link Client.close}. */
  [Symbol.dispose](): void {
    this.close();
  }

  #namespace(res: Resource, options: ObjectOptions, obj?: KubeObject): string | undefined {
    if (!res.namespaced) return undefined;
    return options.namespace ?? obj?.metadata?.namespace ?? this.namespace;
  }

  #object<T extends KubeObject>(
    res: Resource<T>,
    verb: string,
    name: string,
    options: ObjectOptions,
    subresource: string,
  ): Promise<T> {
    const namespace = this.#namespace(res, options);
    const meta = isMetadataOnly(res) && !subresource;
    const got = this.#transport.json<T>({
      method: "GET",
      path: resourcePath(res, { namespace, name, subresource }),
      ...(meta ? { accept: METADATA_ACCEPT } : {}),
      target: target(res, verb, { namespace, name, subresource }),
      signal: options.signal,
    });
    return meta ? got.then((o) => ({ ...o, apiVersion: res.apiVersion, kind: res.kind })) : got;
  }

  #put<T extends KubeObject>(
    res: Resource<T>,
    obj: T,
    options: WriteOptions,
    subresource: string,
  ): Promise<T> {
    const namespace = this.#namespace(res, options, obj);
    const name = requireName(res, obj, subresource ? "replace status of" : "replace");
    return this.#transport.json<T>({
      method: "PUT",
      path: resourcePath(res, { namespace, name, subresource }) + writeQuery(this, options),
      body: withTypeMeta(res, obj),
      target: target(res, "replace", { namespace, name, subresource }),
      signal: options.signal,
    });
  }

  #patch<T extends KubeObject>(
    res: Resource<T>,
    name: string,
    patch: unknown,
    options: PatchOptions,
    subresource: string,
  ): Promise<T> {
    const type = options.type ?? "merge";
    if (!(type in PATCH_TYPES)) {
      throw new TypeError(`Cannot patch ${res.kind} "${name}": unknown patch type "${type}"`);
    }
    if (type === "json" && !Array.isArray(patch)) {
      throw new TypeError(`Cannot patch ${res.kind} "${name}": a JSON patch must be an array`);
    }
    const namespace = this.#namespace(res, options);
    return this.#transport.json<T>({
      method: "PATCH",
      path: resourcePath(res, { namespace, name, subresource }) + writeQuery(this, options),
      body: patch,
      contentType: PATCH_TYPES[type],
      target: target(res, "patch", { namespace, name, subresource }),
      signal: options.signal,
    });
  }

  #apply<T extends KubeObject>(
    res: Resource<T>,
    obj: ApplyObject<T>,
    options: ApplyOptions,
    subresource: string,
  ): Promise<T> {
    const namespace = this.#namespace(res, options, obj as KubeObject);
    const name = requireName(res, obj as KubeObject, "apply");
    return this.#transport.json<T>({
      method: "PATCH",
      path: resourcePath(res, { namespace, name, subresource }) +
        writeQuery(this, options, options.force),
      body: withTypeMeta(res, obj as KubeObject),
      contentType: "application/apply-patch+yaml",
      target: target(res, "apply", { namespace, name, subresource }),
      signal: options.signal,
    });
  }
}

function writeQuery(client: Client, options: WriteOptions, force?: boolean): string {
  const fieldManager = options.fieldManager ?? client.fieldManager;
  const validation = options.fieldValidation;
  // The same few combinations for every write of a client: built once each.
  const id = `${fieldManager}\0${validation ?? ""}\0${options.dryRun ? 1 : 0}${force ? 1 : 0}`;
  let q = writeQueries.get(id);
  if (q === undefined) {
    q = queryString({
      fieldManager,
      fieldValidation: validation,
      dryRun: options.dryRun ? "All" : undefined,
      force: force === true,
    });
    if (writeQueries.size >= 64) writeQueries.clear();
    writeQueries.set(id, q);
  }
  return q;
}
const writeQueries = new Map<string, string>();

function withTypeMeta<T extends KubeObject>(res: Resource, obj: T): T {
  if (obj.apiVersion && obj.kind) return obj;
  return { ...obj, apiVersion: obj.apiVersion ?? res.apiVersion, kind: obj.kind ?? res.kind };
}

function requireName(res: Resource, obj: KubeObject, verb: string): string {
  const name = obj.metadata?.name;
  if (!name) throw new TypeError(`Cannot ${verb} ${res.kind}: metadata.name is missing`);
  return name;
}

function target(
  res: Resource,
  verb: string,
  at: { namespace?: string; name?: string; subresource?: string },
): ApiErrorTarget {
  return {
    verb,
    kind: res.kind,
    apiVersion: res.apiVersion,
    plural: res.plural,
    ...(at.name !== undefined ? { name: at.name } : {}),
    ...(at.namespace ? { namespace: at.namespace } : {}),
    ...(at.subresource ? { subresource: at.subresource } : {}),
  };
}

/**
 * Creates a client from a kubeconfig (see {@link ClientOptions} for the lookup order).
 *
 * @param options Kubeconfig path, context, field manager, user agent, timeout, metrics hook.
 * @returns A client; `close()` it when done.
 * @throws {KubeconfigError} When no usable kubeconfig is found, or its certificate data is
 * not usable.
 *
 * @example An unreachable server is a one-line ConnectionError
 * ```ts
 * import { createClient } from "./client.ts";
 * import { ConnectionError } from "./errors/api_error.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 * const path = await Deno.makeTempFile({ suffix: ".yaml" });
 * await Deno.writeTextFile(path, `apiVersion: v1
 * kind: Config
 * clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1" } }]
 * users: [{ name: u, user: { token: t } }]
 * contexts: [{ name: x, context: { cluster: c, user: u } }]
 * current-context: x
 * `);
 * using client = await createClient({ kubeconfig: path });
 * const err = await client.list(ConfigMap).catch((e) => e);
 * if (!(err instanceof ConnectionError)) throw new Error("expected a ConnectionError");
 * await Deno.remove(path);
 * ```
 *
 * @example List ConfigMaps
 * ```ts ignore — needs a live API server and a kubeconfig context named kind-dev
 * import { createClient } from "./client.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 *
 * using client = await createClient({ context: "kind-dev" });
 * const list = await client.list(ConfigMap, { namespace: "default" });
 * console.log(list.items.map((cm) => cm.metadata.name));
 * ```
 */
export async function createClient(options: ClientOptions = {}): Promise<Client> {
  const access = await loadKubeconfig({ kubeconfig: options.kubeconfig, context: options.context });
  return new Client(access, options);
}
