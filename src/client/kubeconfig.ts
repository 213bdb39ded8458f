/**
 * Where the API server is and how to authenticate to it: the one adapter around
 * `@kubernetes/client-node`'s `KubeConfig`. It finds a kubeconfig (an explicit path,
 * `KUBECONFIG`, `~/.kube/config`, or the in-cluster service account), selects a context and
 * turns it into what an HTTP client needs: the server URL, CA certificates, and per-request
 * credentials (bearer tokens, client certificates, exec plugins, OIDC), refreshed by
 * client-node's authenticators. No client-node type leaves this file.
 *
 * @module
 */
import { firstLine } from "../util/cli_io.ts";
import process from "node:process";
import type { KubeConfig } from "@kubernetes/client-node";

/** Options for {@link loadKubeconfig}. */
export interface KubeconfigOptions {
  /**
   * Path of the kubeconfig file.
   * @default `KUBECONFIG`, then `~/.kube/config`, then the in-cluster service account
   */
  kubeconfig?: string;
  /**
   * Context to use.
   * @default the kubeconfig's `current-context`
   */
  context?: string;
}

/** Credentials for one request. Tokens may change between calls; fetch them per request. */
export interface Credentials {
  /** Headers to send, e.g. `Authorization` and `Impersonate-User`. */
  headers: Record<string, string>;
  /** PEM client certificate (chain), for mutual TLS. */
  cert?: string;
  /** PEM private key of `cert`. */
  key?: string;
}

/** A resolved connection to one API server, as a kubeconfig context describes it. */
export interface ClusterAccess {
  /** The API server's base URL, without a trailing slash, e.g. `https://127.0.0.1:6443`. */
  readonly server: string;
  /** The context's namespace, or `default`. */
  readonly namespace: string;
  /** The selected context's name. */
  readonly context: string;
  /** The file the configuration came from, or `in-cluster`. */
  readonly source: string;
  /** PEM CA certificates to trust in addition to the system's. */
  readonly caCerts: string[];
  /** Proxy URL from the cluster's `proxy-url`, if any. */
  readonly proxy?: string;
  /** True when the cluster sets `insecure-skip-tls-verify`. */
  readonly insecureSkipTlsVerify: boolean;
  /**
   * Credentials for the next request.
   * @throws {KubeconfigError} When an exec plugin or auth provider fails.
   */
  credentials(): Promise<Credentials>;
}

/**
 * A kubeconfig could not be found, read or understood, or its credentials could not be
 * obtained. The message is one line naming the file and the problem.
 *
 * @example The message names the file
 * ```ts
 * import { KubeconfigError } from "./kubeconfig.ts";
 * const err = new KubeconfigError("/tmp/kc.yaml", "context \"dev\" does not exist");
 * if (err.message !== 'Cannot load kubeconfig "/tmp/kc.yaml": context "dev" does not exist') {
 *   throw new Error(err.message);
 * }
 * ```
 */
export class KubeconfigError extends Error {
  /** The kubeconfig's path, or `in-cluster`. */
  readonly path: string;

  /**
   * Creates the error; the message is `Cannot load kubeconfig "<path>": <problem>`.
   *
   * @param path The kubeconfig's path, or `in-cluster`.
   * @param problem What is wrong, one line.
   * @param options The standard `cause`.
   */
  constructor(path: string, problem: string, options?: ErrorOptions) {
    super(`Cannot load kubeconfig "${path}": ${problem}`, options);
    this.name = "KubeconfigError";
    this.path = path;
  }
}

type ClientNode = typeof import("@kubernetes/client-node");
let clientNode: Promise<ClientNode> | undefined;

/**
 * Imports client-node once, dropping Node's `punycode` deprecation warning (DEP0040) while it
 * loads: it is printed under Deno when a dependency requires the `punycode` built-in (client-node
 * 1.x did, through node-fetch → whatwg-url → tr46) and says nothing actionable to kubeno's users.
 * Only that warning and only during the import is suppressed.
 */
function importClientNode(): Promise<ClientNode> {
  clientNode ??= (async () => {
    const original = process.emitWarning;
    process.emitWarning = function (this: unknown, warning: unknown, ...rest: unknown[]) {
      const text = String(warning);
      const code = rest.find((r) => typeof r === "string" && r.startsWith("DEP")) ??
        (rest[0] as { code?: string } | undefined)?.code;
      if (code === "DEP0040" || text.includes("`punycode` module is deprecated")) return;
      return (original as (...a: unknown[]) => void).call(process, warning, ...rest);
    } as typeof process.emitWarning;
    try {
      return await import("@kubernetes/client-node");
    } finally {
      process.emitWarning = original;
    }
  })();
  return clientNode;
}

const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/**
 * Finds and reads a kubeconfig and resolves one context into a {@link ClusterAccess}.
 *
 * Lookup order: `options.kubeconfig`; the files listed in `KUBECONFIG` (merged, the first one
 * wins on conflicts, as kubectl does); `~/.kube/config`; the in-cluster service account
 * (`KUBERNETES_SERVICE_HOST` and its token file).
 *
 * @param options Path and context.
 * @returns The server, CA and credential source of the selected context.
 * @throws {KubeconfigError} When no configuration is found, the file is malformed, or the
 * context, its cluster or its user does not exist.
 *
 * @example Load a kubeconfig file
 * ```ts
 * import { loadKubeconfig } from "./kubeconfig.ts";
 * const path = await Deno.makeTempFile({ suffix: ".yaml" });
 * await Deno.writeTextFile(path, `apiVersion: v1
 * kind: Config
 * clusters: [{ name: c, cluster: { server: "https://127.0.0.1:6443/" } }]
 * users: [{ name: u, user: { token: s3cret } }]
 * contexts: [{ name: dev, context: { cluster: c, user: u, namespace: team } }]
 * current-context: dev
 * `);
 * const access = await loadKubeconfig({ kubeconfig: path });
 * if (access.server !== "https://127.0.0.1:6443" || access.namespace !== "team") throw new Error();
 * const creds = await access.credentials();
 * if (creds.headers.Authorization !== "Bearer s3cret") throw new Error();
 * await Deno.remove(path);
 * ```
 */
export async function loadKubeconfig(options: KubeconfigOptions = {}): Promise<ClusterAccess> {
  const k8s = await importClientNode();
  const kc = new k8s.KubeConfig();
  const source = readConfig(k8s, kc, options.kubeconfig);
  if (options.context !== undefined) {
    if (!kc.getContextObject(options.context)) {
      const known = kc.getContexts().map((c) => `"${c.name}"`).join(", ") || "none";
      throw new KubeconfigError(
        source,
        `context "${options.context}" does not exist (contexts: ${known})`,
      );
    }
    kc.setCurrentContext(options.context);
  }
  const contextName = kc.getCurrentContext();
  if (!contextName) {
    throw new KubeconfigError(source, "no current-context is set; pass a context");
  }
  const ctx = kc.getContextObject(contextName);
  if (!ctx) throw new KubeconfigError(source, `current-context "${contextName}" does not exist`);
  const cluster = kc.getCluster(ctx.cluster);
  if (!cluster) {
    throw new KubeconfigError(
      source,
      `cluster "${ctx.cluster}" of context "${contextName}" does not exist`,
    );
  }
  if (!cluster.server) {
    throw new KubeconfigError(source, `cluster "${cluster.name}" has no server`);
  }
  let server: string;
  try {
    server = new URL(cluster.server).href.replace(/\/+$/, "");
  } catch {
    throw new KubeconfigError(source, `server "${cluster.server}" is not a valid URL`);
  }
  if (ctx.user && !kc.getUser(ctx.user)) {
    throw new KubeconfigError(
      source,
      `user "${ctx.user}" of context "${contextName}" does not exist`,
    );
  }
  const user = kc.getCurrentUser();
  const dynamic = Boolean(user?.exec || user?.authProvider);
  const first = await resolveCredentials(kc, source, user?.name);
  // From the cluster itself: client-node applies the CA only when the context names a user.
  const ca = readCa(source, cluster.caData, cluster.caFile) ?? first.ca;
  checkTlsData(source, ca, first.credentials);
  return {
    server,
    namespace: ctx.namespace || "default",
    context: contextName,
    source,
    caCerts: ca ? [ca] : [],
    proxy: cluster.proxyUrl,
    insecureSkipTlsVerify: cluster.skipTLSVerify === true,
    credentials: dynamic
      ? async () => (await resolveCredentials(kc, source, user?.name)).credentials
      : () => Promise.resolve(first.credentials),
  };
}

/** Loads the configuration into `kc` and returns where it came from. */
function readConfig(k8s: ClientNode, kc: KubeConfig, explicit: string | undefined): string {
  if (explicit !== undefined) {
    loadFile(kc, explicit, "does not exist");
    return explicit;
  }
  const env = Deno.env.get("KUBECONFIG");
  if (env) {
    const sep = Deno.build.os === "windows" ? ";" : ":";
    const files = env.split(sep).filter((f) => f && exists(f));
    if (files.length === 0) {
      throw new KubeconfigError(env, "KUBECONFIG names no existing file");
    }
    loadFile(kc, files[0], "does not exist");
    for (const f of files.slice(1)) {
      const extra = new k8s.KubeConfig();
      loadFile(extra, f, "does not exist");
      try {
        kc.mergeConfig(extra, true);
      } catch (e) {
        throw new KubeconfigError(f, firstLine(e));
      }
    }
    return files.join(sep);
  }
  const home = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE");
  const defaultPath = home ? `${home}/.kube/config` : undefined;
  if (defaultPath && exists(defaultPath)) {
    loadFile(kc, defaultPath, "does not exist");
    return defaultPath;
  }
  if (Deno.env.get("KUBERNETES_SERVICE_HOST") && exists(`${SA_DIR}/token`)) {
    try {
      kc.loadFromCluster();
    } catch (e) {
      throw new KubeconfigError("in-cluster", firstLine(e));
    }
    return "in-cluster";
  }
  throw new KubeconfigError(
    defaultPath ?? "~/.kube/config",
    "no kubeconfig found; set KUBECONFIG, pass a kubeconfig path, or run inside a cluster",
  );
}

function loadFile(kc: KubeConfig, path: string, missing: string): void {
  if (!exists(path)) throw new KubeconfigError(path, `file ${missing}`);
  try {
    kc.loadFromFile(path, { onInvalidEntry: "throw" });
  } catch (e) {
    throw new KubeconfigError(path, firstLine(e), { cause: e });
  }
  if (!kc.getContexts().length && !kc.getClusters().length) {
    throw new KubeconfigError(path, "it defines no clusters and no contexts");
  }
}

interface Resolved {
  ca?: string;
  credentials: Credentials;
}

const decoder = new TextDecoder();

function pem(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array) return decoder.decode(value);
  return String(value);
}

/** Runs client-node's authenticators (static, file, exec, OIDC) for the current user. */
async function resolveCredentials(
  kc: KubeConfig,
  source: string,
  userName: string | undefined,
): Promise<Resolved> {
  const opts: {
    headers?: Record<string, unknown>;
    ca?: unknown;
    cert?: unknown;
    key?: unknown;
    auth?: string;
  } = {};
  try {
    await kc.applyToHTTPSOptions(opts as Parameters<KubeConfig["applyToHTTPSOptions"]>[0]);
  } catch (e) {
    const who = userName ? `credentials of user "${userName}"` : "credentials";
    throw new KubeconfigError(source, `cannot obtain ${who}: ${firstLine(e)}`, { cause: e });
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v !== undefined && v !== null) headers[k] = String(v);
  }
  if (opts.auth && !headers.Authorization) {
    headers.Authorization = `Basic ${
      btoa(String.fromCharCode(...new TextEncoder().encode(opts.auth)))
    }`;
  }
  return {
    ca: pem(opts.ca),
    credentials: { headers, cert: pem(opts.cert), key: pem(opts.key) },
  };
}

function readCa(
  source: string,
  data: string | undefined,
  file: string | undefined,
): string | undefined {
  if (file) {
    try {
      return Deno.readTextFileSync(file);
    } catch (e) {
      throw new KubeconfigError(
        source,
        `cannot read certificate-authority "${file}": ${firstLine(e)}`,
      );
    }
  }
  if (!data) return undefined;
  try {
    return decoder.decode(Uint8Array.from(atob(data.replace(/\s+/g, "")), (c) => c.charCodeAt(0)));
  } catch {
    throw new KubeconfigError(source, "certificate-authority-data is not valid base64");
  }
}

/** Reports unusable CA or client certificate data now, naming the file, not on first use. */
function checkTlsData(source: string, ca: string | undefined, creds: Credentials): void {
  const { cert, key } = creds;
  try {
    Deno.createHttpClient({
      caCerts: ca ? [ca] : undefined,
      ...(cert && key ? { cert, key } : {}),
    }).close();
  } catch (e) {
    throw new KubeconfigError(source, `unusable certificate data: ${firstLine(e)}`, { cause: e });
  }
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch (err) {
    // A compiled operator runs with exact permissions: say so instead of "does not exist".
    if (err instanceof Deno.errors.NotCapable) {
      throw new KubeconfigError(
        path,
        `this program may not read it; grant --allow-read=${path} (or run inside the cluster)`,
      );
    }
    return false;
  }
}
