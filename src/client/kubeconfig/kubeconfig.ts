/**
 * Where the API server is and how to authenticate to it, read natively the way kubectl and
 * client-go read it: a kubeconfig file (an explicit path, the `KUBECONFIG` list merged,
 * `~/.kube/config`) or the in-cluster service account; one context; the server URL, CA
 * certificates, `proxy-url` and `tls-server-name`; and per-request credentials — client
 * certificates (files or inline data), bearer tokens, token files re-read as they rotate,
 * exec credential plugins cached until they expire, basic auth and impersonation.
 *
 * Only auth-provider plugins (`oidc`…) go through `@kubernetes/client-node`, imported when a
 * kubeconfig user names one; otherwise client-node is never loaded.
 *
 * @module
 */
import { firstLine } from "../../util/cli_io.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import { type Credentials, credentialSource } from "./_credentials.ts";
import { execConfigProblem } from "./_exec_plugin.ts";
import { findKubeconfig } from "./_kubeconfig_file.ts";
import { KubeconfigError } from "./kubeconfig_error.ts";

export type { Credentials };

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
  /**
   * The time source for credential caching: token and certificate files are read again a
   * minute after the last read, exec plugin credentials are kept until they expire.
   * @default realClock
   */
  clock?: Clock;
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
  /**
   * The name to verify the server's certificate against (and send as SNI) instead of the
   * server URL's host: the cluster's `tls-server-name`.
   */
  readonly tlsServerName?: string;
  /**
   * True when the cluster sets `insecure-skip-tls-verify`: the server's certificate is not
   * verified (Deno's fetch cannot skip verification per client, so the transport runs TLS
   * itself through `node:tls` on a private Unix socket; HTTP/1.1 only).
   */
  readonly insecureSkipTlsVerify: boolean;
  /**
   * True when the cluster sets `disable-compression`: requests send
   * `Accept-Encoding: identity` instead of fetch's `gzip, br`.
   */
  readonly disableCompression?: boolean;
  /**
   * Credentials for the next request.
   * @throws {KubeconfigError} When an exec plugin or auth provider fails.
   */
  credentials(): Promise<Credentials>;
  /**
   * Tells the source that the API server answered 401 Unauthorized to a request sent with
   * `used`. Token and certificate files are read again and an exec plugin runs again (unless
   * another request already replaced that credential).
   *
   * @param used The credentials the rejected request carried.
   * @returns True when the next {@link ClusterAccess.credentials} differ from `used`, so the
   * request is worth sending once more.
   * @throws {KubeconfigError} When an exec plugin fails.
   */
  invalidate?(used: Credentials): Promise<boolean>;
}

/**
 * Finds and reads a kubeconfig and resolves one context into a {@link ClusterAccess}.
 *
 * Lookup order: `options.kubeconfig`; the files listed in `KUBECONFIG` (merged, the first one
 * wins on conflicts, as kubectl does); `~/.kube/config`; the in-cluster service account
 * (`KUBERNETES_SERVICE_HOST` and its token file). Relative file names in a kubeconfig are
 * relative to the file that holds them.
 *
 * Credentials, as client-go handles them: client certificates (`client-certificate(-data)`,
 * `client-key(-data)`), `token`, `tokenFile` (and the in-cluster token), re-read a minute
 * after the last read and after a 401; `exec` plugins (`client.authentication.k8s.io/v1` and
 * `v1beta1`), run once and cached until their `expirationTimestamp`, run again after a 401;
 * basic auth; `as`/`as-uid` impersonation; `auth-provider` through `@kubernetes/client-node`,
 * loaded only for it.
 *
 * @param options Path, context and clock.
 * @returns The server, CA and credential source of the selected context.
 * @throws {KubeconfigError} When no configuration is found, the file is malformed, the
 * context, its cluster or its user does not exist, or a referenced file cannot be read.
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
  const data = await findKubeconfig(options.kubeconfig);
  const source = data.source;
  const fail = (problem: string, cause?: unknown): never => {
    throw new KubeconfigError(source, problem, cause === undefined ? undefined : { cause });
  };
  const contextName = options.context ?? data.currentContext;
  if (options.context !== undefined && !data.contexts.has(options.context)) {
    const known = [...data.contexts.keys()].map((c) => `"${c}"`).join(", ") || "none";
    fail(`context "${options.context}" does not exist (contexts: ${known})`);
  }
  if (!contextName) return fail("no current-context is set; pass a context");
  const ctx = data.contexts.get(contextName);
  if (!ctx) return fail(`current-context "${contextName}" does not exist`);
  const cluster = ctx.cluster === undefined ? undefined : data.clusters.get(ctx.cluster);
  if (!cluster) {
    return fail(`cluster "${ctx.cluster ?? ""}" of context "${contextName}" does not exist`);
  }
  if (!cluster.server) return fail(`cluster "${ctx.cluster}" has no server`);
  let server: string;
  try {
    server = new URL(cluster.server).href.replace(/\/+$/, "");
  } catch {
    return fail(`server "${cluster.server}" is not a valid URL`);
  }
  const user = ctx.user ? data.users.get(ctx.user) : {};
  if (!user) return fail(`user "${ctx.user}" of context "${contextName}" does not exist`);
  const tlsServerName = cluster["tls-server-name"] || undefined;
  const proxy = cluster["proxy-url"] || undefined;
  const clusterName = `cluster "${ctx.cluster}"`;
  if (proxy) {
    const problem = proxyProblem(proxy, tlsServerName, cluster["insecure-skip-tls-verify"]);
    if (problem) fail(`${clusterName}: ${problem}`);
  }
  const caData = cluster["certificate-authority-data"];
  const caFile = cluster["certificate-authority"];
  if (caData && caFile) {
    // client-go's validation refuses this too ("certificate-authority-data will override").
    fail(
      `${clusterName} sets both certificate-authority-data and certificate-authority ` +
        "(client-go would use certificate-authority-data); remove one",
    );
  }
  const insecure = cluster["insecure-skip-tls-verify"] === true;
  if (insecure && (caData || caFile)) {
    fail(
      `${clusterName} sets insecure-skip-tls-verify together with a certificate authority, ` +
        "which client-go does not allow; remove one",
    );
  }
  if (insecure && Deno.build.os === "windows") {
    fail(
      `${clusterName} sets insecure-skip-tls-verify, not supported on Windows; set certificate-authority-data`,
    );
  }
  const ca = readCa(source, caData, caFile);
  const who = ctx.user ? `credentials of user "${ctx.user}"` : "credentials";
  const execProblem = user.exec && execConfigProblem(user.exec);
  if (execProblem) fail(`cannot obtain ${who}: ${execProblem}`);
  let creds;
  try {
    creds = await credentialSource(user, {
      cluster,
      caPem: ca,
      clock: options.clock ?? realClock,
      raw: data.raw,
      context: contextName,
    });
  } catch (e) {
    return fail(`cannot obtain ${who}: ${firstLine(e)}`, e);
  }
  const first = creds.dynamic && (user.exec || user["auth-provider"])
    ? undefined
    : await creds.credentials();
  checkTlsData(source, ca, first);
  const wrap = (e: unknown) =>
    e instanceof KubeconfigError
      ? e
      : new KubeconfigError(source, `cannot obtain ${who}: ${firstLine(e)}`, { cause: e });
  return {
    server,
    namespace: ctx.namespace || "default",
    context: contextName,
    source,
    caCerts: ca ? [ca] : [],
    proxy,
    tlsServerName,
    insecureSkipTlsVerify: insecure,
    disableCompression: cluster["disable-compression"] === true,
    credentials: creds.dynamic
      ? () => creds.credentials().catch((e) => Promise.reject(wrap(e)))
      : creds.credentials,
    invalidate: (used) => creds.invalidate(used).catch((e) => Promise.reject(wrap(e))),
  };
}

/** Why a `proxy-url` cannot be used (with the other TLS settings), or undefined. */
function proxyProblem(
  proxy: string,
  tlsServerName: string | undefined,
  insecure: boolean | undefined,
): string | undefined {
  let url: URL;
  try {
    url = new URL(proxy);
  } catch {
    return `proxy-url "${proxy}" is not a valid URL`;
  }
  if (!["http:", "https:", "socks5:", "socks5h:"].includes(url.protocol)) {
    return `proxy-url "${proxy}" has scheme ${
      url.protocol.slice(0, -1)
    }; use http, https or socks5`;
  }
  if ((tlsServerName || insecure) && url.protocol !== "http:") {
    const other = tlsServerName ? "tls-server-name" : "insecure-skip-tls-verify";
    return `proxy-url "${proxy}" together with ${other} works with an http:// proxy only; ` +
      `use one, or drop ${other}`;
  }
  return undefined;
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
    return new TextDecoder().decode(
      Uint8Array.from(atob(data.replace(/\s+/g, "")), (c) => c.charCodeAt(0)),
    );
  } catch {
    throw new KubeconfigError(source, "certificate-authority-data is not valid base64");
  }
}

/** Reports unusable CA or client certificate data now, naming the file, not on first use. */
function checkTlsData(source: string, ca: string | undefined, creds: Credentials | undefined) {
  const { cert, key } = creds ?? {};
  try {
    Deno.createHttpClient({
      caCerts: ca ? [ca] : undefined,
      ...(cert && key ? { cert, key } : {}),
    }).close();
  } catch (e) {
    throw new KubeconfigError(source, `unusable certificate data: ${firstLine(e)}`, { cause: e });
  }
}
