/**
 * An HTTP proxy on loopback in front of an API server that makes cache lag deterministic: it
 * holds back the watch streams of chosen resources for a given time, so a test can make an
 * informer's view trail the server by exactly that much — the state controller-runtime and
 * client-go users know as a stale cache — instead of hoping for a slow machine.
 *
 * Where the fault proxy (`startFaultProxy`) copies TCP bytes (and so cannot tell one request from
 * another), this proxy terminates TLS, reads each request and forwards it upstream as a new
 * request, so it can pick out the watches of one resource among all the streams multiplexed
 * on one connection (HTTP/2, or several HTTP/1.1 ones).
 *
 * ## Flow
 *
 * 1. {@linkcode startLagProxy} reads the upstream kubeconfig with kubeno's own loader, issues
 *    a CA and a serving certificate for `127.0.0.1`, listens with `Deno.serve` (HTTP/1.1 and
 *    HTTP/2 by ALPN) and writes {@linkcode LagProxy.prototype.kubeconfigPath}: a kubeconfig
 *    whose cluster is the proxy and whose user is the upstream one.
 * 2. Each request is sent upstream with the same method, path, query, headers and streamed
 *    body, minus hop-by-hop headers and with `accept-encoding: identity`. A request that
 *    carries its own `Authorization` header is forwarded with it and without a client
 *    certificate; any other request gets the kubeconfig user's credentials (client
 *    certificate, token, impersonation headers), asked for per request.
 * 3. The response comes back streamed, status and headers as they were. The body of a watch
 *    (`watch=true`, `watch=1` or the legacy `/watch/` path) whose resource matches a rule of
 *    {@linkcode LagProxy.prototype.delay} is held back: each chunk read from upstream is
 *    delivered `ms` after it arrived.
 *
 * ## Guarantees
 *
 * - Chunks of a watch are delivered in the order they arrived, none before `ms` (of the rule
 *   in force when it arrived) has passed since its arrival. The delay is on chunks, not on
 *   events, so JSON and protobuf watch framing are delayed alike.
 * - A rule applies to matching watches already open as well as to later ones; removing it
 *   (`ms = 0`) makes chunks that arrive afterwards pass at once, after the ones still held.
 * - Lists, gets and writes are never delayed; nothing is buffered beyond the held chunks.
 * - `close()` stops listening, ends every open stream and removes the temporary kubeconfig.
 *
 * ## Caveats
 *
 * - For tests only: it trusts every caller on loopback and forwards with the upstream user.
 * - The written kubeconfig holds the credentials the upstream user had at start; a rotating
 *   token or exec plugin is not followed there (the proxy's own upstream requests are).
 * - Connection upgrades (`exec`, `attach`, `port-forward`) are not proxied; a cluster with
 *   `tls-server-name` is refused.
 * - A held chunk stays held when its rule is removed; a watch whose upstream ends delivers its
 *   held chunks first, then ends.
 *
 * @module
 */
import { firstLine } from "../util/cli_io.ts";
import { createCa, issueCert } from "../util/x509.ts";
import { toYaml } from "../util/yaml.ts";
import {
  type ClusterAccess,
  type Credentials,
  loadKubeconfig,
} from "../client/kubeconfig/kubeconfig.ts";

/** Options for {@linkcode startLagProxy}. */
export interface LagProxyOptions {
  /** Path of the upstream kubeconfig (e.g. a ControlPlane's `kubeconfigPath`). */
  kubeconfig: string;
  /**
   * Its context.
   * @default the current context
   */
  context?: string;
  /**
   * Port to listen on; `0` picks a free one.
   * @default 0
   */
  port?: number;
}

/**
 * Which watch streams to delay: a resource, optionally narrowed to an API group and a
 * namespace.
 */
export interface LagMatch {
  /** The resource's plural name, e.g. `configmaps`. */
  resource: string;
  /**
   * The API group, `""` for the core group.
   * @default any group
   */
  group?: string;
  /**
   * Only watches of this namespace; watches across all namespaces do not match.
   * @default every namespace, and cluster-wide watches
   */
  namespace?: string;
}

/** What {@linkcode LagProxy.prototype.stats} counts. */
export interface LagProxyStats {
  /** Watch requests seen since the start. */
  watches: number;
  /** Open watches a rule delays now. */
  delayedWatches: number;
  /** Chunks of watch bodies held back since the start. */
  delayedChunks: number;
}

/** A watch's resource, from its path. */
interface Target {
  group: string;
  namespace: string | undefined;
  resource: string;
}

interface Rule {
  match: LagMatch;
  ms: number;
}

/** Not forwarded in either direction (RFC 9110 section 7.6.1, plus the body's framing). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
]);

/** Responses that have no body whatever the upstream sent. */
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

// The constructor takes internal state, so it is private and startLagProxy builds proxies
// through this function, set in the class's static block.
let construct: (init: LagProxyInit) => LagProxy;

interface LagProxyInit {
  access: ClusterAccess;
  serving: { cert: string; key: string };
  port: number;
  dir: string;
}

/**
 * A running lag proxy. Close it with `close()` or `await using`.
 *
 * Guarantees: a watch whose resource matches a rule of
 * {@linkcode LagProxy.prototype.delay} receives every chunk `ms` after the proxy read it from
 * upstream, in order; every other request passes through as it came, streamed.
 *
 * @example Point a client at the proxy
 * ```ts
 * import { startLagProxy } from "./lag_proxy.ts";
 * import { loadKubeconfig } from "../client/kubeconfig/kubeconfig.ts";
 *
 * // An upstream kubeconfig; starting the proxy reads it but does not connect.
 * const upstream = await Deno.makeTempFile({ suffix: ".yaml" });
 * await Deno.writeTextFile(upstream, `apiVersion: v1
 * kind: Config
 * clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443" } }]
 * users: [{ name: u, user: { token: s3cret } }]
 * contexts: [{ name: dev, context: { cluster: c, user: u } }]
 * current-context: dev
 * `);
 * {
 *   await using proxy = await startLagProxy({ kubeconfig: upstream });
 *   const access = await loadKubeconfig({ kubeconfig: proxy.kubeconfigPath });
 *   if (access.server !== proxy.url) throw new Error(access.server);
 *   if ((await access.credentials()).headers.Authorization !== "Bearer s3cret") throw new Error();
 * }
 * await Deno.remove(upstream);
 * ```
 */
export class LagProxy implements AsyncDisposable {
  /** The proxy's URL: `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** The port the proxy listens on. */
  readonly port: number;
  /**
   * A kubeconfig (in a temporary folder, removed by `close()`) whose cluster is the proxy,
   * with its CA, and whose user is the upstream kubeconfig's.
   */
  readonly kubeconfigPath: string;
  readonly #access: ClusterAccess;
  readonly #dir: string;
  readonly #stop = new AbortController();
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #clients = new Map<string, Deno.HttpClient>();
  readonly #rules = new Map<string, Rule>();
  readonly #open = new Set<Target>();
  #watches = 0;
  #delayedChunks = 0;
  #closing: Promise<void> | undefined;

  static {
    construct = (init) => new LagProxy(init);
  }

  private constructor(init: LagProxyInit) {
    this.#access = init.access;
    this.#dir = init.dir;
    this.#server = Deno.serve({
      hostname: "127.0.0.1",
      port: init.port,
      cert: init.serving.cert,
      key: init.serving.key,
      signal: this.#stop.signal,
      onListen: () => {},
      onError: (e) => failure(`Cannot proxy the request: ${firstLine(e)}`),
    }, (req, info) => this.#forward(req, info.completed));
    this.port = this.#server.addr.port;
    this.url = `https://127.0.0.1:${this.port}`;
    this.kubeconfigPath = `${init.dir}/kubeconfig.yaml`;
  }

  /**
   * Delays every byte of the watch responses that `match` selects — requests with
   * `watch=true` or `watch=1`, including ones already open — by `ms`; `ms = 0` removes the
   * rule. Setting a rule for the same match again replaces it; when several rules match a
   * watch, the longest delay applies.
   *
   * @param match The resource, and optionally its API group and namespace.
   * @param ms How long each chunk is held, in milliseconds; `0` removes the rule.
   * @throws {TypeError} When `match.resource` is empty.
   * @throws {RangeError} When `ms` is negative or not finite.
   *
   * @example Delay ConfigMap watches in one namespace, then stop
   * ```ts
   * import { startLagProxy } from "./lag_proxy.ts";
   * const upstream = await Deno.makeTempFile({ suffix: ".yaml" });
   * await Deno.writeTextFile(upstream, `apiVersion: v1
   * kind: Config
   * clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443" } }]
   * users: [{ name: u, user: { token: s3cret } }]
   * contexts: [{ name: dev, context: { cluster: c, user: u } }]
   * current-context: dev
   * `);
   * {
   *   await using proxy = await startLagProxy({ kubeconfig: upstream });
   *   const cms = { resource: "configmaps", group: "", namespace: "team-a" };
   *   proxy.delay(cms, 2_000); // an informer on team-a's ConfigMaps now lags 2 s
   *   proxy.delay(cms, 0); // and no longer
   *   if (proxy.stats.delayedWatches !== 0) throw new Error();
   * }
   * await Deno.remove(upstream);
   * ```
   */
  delay(match: LagMatch, ms: number): void {
    if (typeof match.resource !== "string" || match.resource === "") {
      throw new TypeError(`Cannot set a watch delay: resource "${match.resource}" is empty`);
    }
    if (!Number.isFinite(ms) || ms < 0) {
      throw new RangeError(
        `Cannot set a watch delay for "${match.resource}": ${ms} ms is not a duration`,
      );
    }
    const key = JSON.stringify([match.resource, match.group ?? null, match.namespace ?? null]);
    if (ms === 0) this.#rules.delete(key);
    else this.#rules.set(key, { match: { ...match }, ms });
  }

  /**
   * Counters for tests.
   *
   * @returns Watch requests seen since the start, open watches delayed now, and chunks held
   * back since the start.
   */
  get stats(): LagProxyStats {
    let delayedWatches = 0;
    for (const t of this.#open) if (this.#delayFor(t) > 0) delayedWatches++;
    return { watches: this.#watches, delayedWatches, delayedChunks: this.#delayedChunks };
  }

  /**
   * Stops listening, ends every open stream (held chunks are dropped) and removes the
   * temporary kubeconfig.
   *
   * @returns A promise that resolves once everything is closed.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stop.abort(new Error("The lag proxy is closed"));
      await this.#server.finished;
      for (const c of this.#clients.values()) c.close();
      this.#clients.clear();
      await Deno.remove(this.#dir, { recursive: true }).catch(() => {});
    })();
    return this.#closing;
  }

  /**
   * Same as {@linkcode LagProxy.prototype.close}, for `await using`.
   *
   * @returns A promise that resolves once closed.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Sends `req` upstream; `completed` rejects when the caller goes away. */
  async #forward(req: Request, completed: Promise<void>): Promise<Response> {
    const url = new URL(req.url);
    // Not `req.signal`: Deno aborts it (and warns) after every successful response too.
    const gone = new AbortController();
    completed.catch((e) => gone.abort(e));
    const headers = forwardable(req.headers);
    headers.set("accept-encoding", "identity");
    let creds: Credentials | undefined;
    if (!req.headers.has("authorization")) {
      try {
        creds = await this.#access.credentials();
      } catch (e) {
        return failure(`Cannot obtain upstream credentials: ${firstLine(e)}`);
      }
      for (const [k, v] of Object.entries(creds.headers)) if (!headers.has(k)) headers.set(k, v);
    }
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    let res: Response;
    try {
      res = await fetch(this.#access.server + url.pathname + url.search, {
        method: req.method,
        headers,
        body: hasBody ? req.body : undefined,
        redirect: "manual",
        signal: AbortSignal.any([gone.signal, this.#stop.signal]),
        client: this.#client(creds),
      });
    } catch (e) {
      const what = `${req.method} ${url.pathname}`;
      return failure(`Cannot forward "${what}" to "${this.#access.server}": ${firstLine(e)}`);
    }
    const init = {
      status: res.status,
      statusText: res.statusText,
      headers: forwardable(res.headers),
    };
    if (NULL_BODY_STATUS.has(res.status) || req.method === "HEAD" || !res.body) {
      await res.body?.cancel();
      return new Response(null, init);
    }
    const target = parsePath(url.pathname);
    const watch = url.searchParams.get("watch");
    if (!target || !(target.legacyWatch || watch === "true" || watch === "1")) {
      return new Response(res.body, init);
    }
    this.#watches++;
    return new Response(this.#held(res.body, target), init);
  }

  /** A client for the credentials (none: the caller brought its own `Authorization`). */
  #client(creds: Credentials | undefined): Deno.HttpClient {
    const { cert, key } = creds ?? {};
    const id = cert && key ? `${cert}\0${key}` : "";
    let client = this.#clients.get(id);
    if (!client) {
      client = Deno.createHttpClient({
        caCerts: this.#access.caCerts.length ? [...this.#access.caCerts] : undefined,
        ...(cert && key ? { cert, key } : {}),
        ...(this.#access.proxy ? { proxy: { url: this.#access.proxy } } : {}),
      });
      this.#clients.set(id, client);
    }
    return client;
  }

  #delayFor(t: Target): number {
    let ms = 0;
    for (const { match, ms: m } of this.#rules.values()) {
      if (
        match.resource === t.resource &&
        (match.group === undefined || match.group === t.group) &&
        (match.namespace === undefined || match.namespace === t.namespace)
      ) ms = Math.max(ms, m);
    }
    return ms;
  }

  /** The watch body, each chunk delivered `ms` after it arrived (the rule is asked per chunk). */
  #held(body: ReadableStream<Uint8Array>, target: Target): ReadableStream<Uint8Array> {
    const reader = body.getReader();
    const held: { chunk: Uint8Array; due: number }[] = [];
    const cancelled = new AbortController();
    const stop = AbortSignal.any([cancelled.signal, this.#stop.signal]);
    let arrived: PromiseWithResolvers<void> | undefined;
    let ended = false;
    let error: unknown;
    let lastDue = 0;
    // The same object is the watch's entry in #open, for `stats`.
    this.#open.add(target);
    const done = () => this.#open.delete(target);
    stop.addEventListener("abort", () => arrived?.resolve(), { once: true });
    (async () => {
      try {
        for (let r = await reader.read(); !r.done; r = await reader.read()) {
          const ms = this.#delayFor(target);
          if (ms > 0) this.#delayedChunks++;
          lastDue = Math.max(lastDue, performance.now() + ms);
          held.push({ chunk: r.value, due: lastDue });
          arrived?.resolve();
        }
      } catch (e) {
        error = e;
      }
      ended = true;
      arrived?.resolve();
    })();
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (!held.length && !ended && !stop.aborted) {
          arrived = Promise.withResolvers();
          await arrived.promise;
          arrived = undefined;
        }
        const next = held.shift();
        if (next && !stop.aborted) await sleep(next.due - performance.now(), stop);
        if (stop.aborted) {
          done();
          controller.error(stop.reason);
        } else if (next) {
          controller.enqueue(next.chunk);
        } else {
          done();
          if (error === undefined) controller.close();
          else controller.error(error);
        }
      },
      cancel: async (reason) => {
        done();
        cancelled.abort(reason);
        await reader.cancel(reason).catch(() => {});
      },
    }, { highWaterMark: 0 });
  }
}

/**
 * Starts a lag proxy on `127.0.0.1` in front of the API server of a kubeconfig.
 *
 * @param options The upstream kubeconfig and context, and the local port.
 * @returns The running proxy; point clients at its `kubeconfigPath`.
 * @throws {KubeconfigError} When the kubeconfig cannot be read or its context resolved; the
 * message is one line naming the file.
 * @throws {TypeError} When `kubeconfig` is empty or its cluster sets `tls-server-name`.
 * @throws {Deno.errors.AddrInUse} When `port` is taken.
 *
 * @example Make an informer's cache lag behind a real control plane
 * ```ts ignore — starts a control plane (etcd and kube-apiserver) to proxy to
 * import { startLagProxy } from "./lag_proxy.ts";
 * import { startControlPlane } from "./control_plane.ts";
 *
 * await using cp = await startControlPlane();
 * await using proxy = await startLagProxy({ kubeconfig: cp.kubeconfigPath });
 * proxy.delay({ resource: "configmaps", group: "" }, 1_000);
 * // run the operator with proxy.kubeconfigPath: its ConfigMap cache is a second behind
 * ```
 */
export async function startLagProxy(options: LagProxyOptions): Promise<LagProxy> {
  if (!options.kubeconfig) {
    throw new TypeError("Cannot start lag proxy: the kubeconfig path is empty");
  }
  const access = await loadKubeconfig({ kubeconfig: options.kubeconfig, context: options.context });
  if (access.tlsServerName) {
    throw new TypeError(
      `Cannot start lag proxy: kubeconfig "${access.source}" sets tls-server-name ` +
        `"${access.tlsServerName}", which the lag proxy does not support`,
    );
  }
  const user = kubeconfigUser(await access.credentials());
  const ca = await createCa("kubeno-lag-proxy-ca");
  const serving = await issueCert(
    { commonName: "kubeno-lag-proxy", ipAddresses: ["127.0.0.1"], server: true },
    ca,
  );
  const dir = await Deno.makeTempDir({ prefix: "kubeno-lag-proxy-" });
  let proxy: LagProxy | undefined;
  try {
    proxy = construct({
      access,
      serving: { cert: serving.certPem, key: serving.keyPem },
      port: options.port ?? 0,
      dir,
    });
    await Deno.writeTextFile(
      proxy.kubeconfigPath,
      toYaml([{
        apiVersion: "v1",
        kind: "Config",
        clusters: [{
          name: "lag-proxy",
          cluster: { server: proxy.url, "certificate-authority-data": btoa(ca.certPem) },
        }],
        users: [{ name: "lag-proxy", user }],
        contexts: [{
          name: "lag-proxy",
          context: { cluster: "lag-proxy", user: "lag-proxy", namespace: access.namespace },
        }],
        "current-context": "lag-proxy",
      }]),
      { mode: 0o600 },
    );
    return proxy;
  } catch (e) {
    if (proxy) await proxy.close();
    else await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw e;
  }
}

/** The kubeconfig `user` entry that sends these credentials. */
function kubeconfigUser(creds: Credentials): Record<string, string> {
  const user: Record<string, string> = {};
  if (creds.cert && creds.key) {
    user["client-certificate-data"] = btoa(creds.cert);
    user["client-key-data"] = btoa(creds.key);
  }
  const auth = creds.headers.Authorization ?? "";
  if (auth.startsWith("Bearer ")) user.token = auth.slice("Bearer ".length);
  if (auth.startsWith("Basic ")) {
    const plain = new TextDecoder().decode(
      Uint8Array.from(atob(auth.slice("Basic ".length)), (c) => c.charCodeAt(0)),
    );
    const colon = plain.indexOf(":");
    user.username = plain.slice(0, colon);
    user.password = plain.slice(colon + 1);
  }
  if (creds.headers["Impersonate-User"]) user.as = creds.headers["Impersonate-User"];
  if (creds.headers["Impersonate-Uid"]) user["as-uid"] = creds.headers["Impersonate-Uid"];
  return user;
}

/**
 * The resource a request path addresses: `/api/v1/[namespaces/NS/]RESOURCE` (core group) or
 * `/apis/GROUP/VERSION/[namespaces/NS/]RESOURCE`, with the legacy `watch/` after the version.
 */
function parsePath(pathname: string): (Target & { legacyWatch: boolean }) | undefined {
  let segments: string[];
  try {
    segments = pathname.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined;
  }
  let group: string;
  let rest: string[];
  if (segments[0] === "api" && segments.length >= 3) {
    [group, rest] = ["", segments.slice(2)];
  } else if (segments[0] === "apis" && segments.length >= 4) {
    [group, rest] = [segments[1], segments.slice(3)];
  } else {
    return undefined;
  }
  const legacyWatch = rest[0] === "watch";
  if (legacyWatch) rest = rest.slice(1);
  if (rest[0] === "namespaces" && rest.length >= 3) {
    return { group, namespace: rest[1], resource: rest[2], legacyWatch };
  }
  return rest.length ? { group, namespace: undefined, resource: rest[0], legacyWatch } : undefined;
}

/** The headers to pass on: all but hop-by-hop ones and those `Connection` names. */
function forwardable(from: Headers): Headers {
  const listed = new Set(
    (from.get("connection") ?? "").split(",").map((h) => h.trim().toLowerCase()),
  );
  const out = new Headers();
  for (const [k, v] of from) if (!HOP_BY_HOP.has(k) && !listed.has(k)) out.append(k, v);
  return out;
}

/**
 * A Kubernetes `Status` response for a request the proxy could not forward: 503, as the API
 * server's own aggregation proxy answers when it cannot reach a backend (clients retry it).
 */
function failure(message: string): Response {
  const code = 503;
  return Response.json(
    {
      kind: "Status",
      apiVersion: "v1",
      status: "Failure",
      message,
      reason: "ServiceUnavailable",
      code,
    },
    { status: code },
  );
}

/** Resolves after `ms` or when `signal` aborts, leaving no timer behind. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
