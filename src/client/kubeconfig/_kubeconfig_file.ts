// Reading kubeconfig files the way kubectl and client-go do: one file or the KUBECONFIG list
// merged (for each named entry and for current-context the first file that sets it wins),
// relative file references resolved against the file that holds them, and the in-cluster
// service account. Only plain data leaves this module; nothing here authenticates.
import { firstLine } from "../../util/cli_io.ts";
import { parseKubeconfigYaml } from "./_kubeconfig_yaml.ts";
import { KubeconfigError } from "./kubeconfig_error.ts";

/** A `clusters[].cluster` entry, with file references made absolute. */
export interface KubeCluster {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
  "disable-compression"?: boolean;
  extensions?: { name: string; extension: unknown }[];
}

/** An exec credential plugin as a kubeconfig user declares it. */
export interface ExecConfig {
  apiVersion?: string;
  command?: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  installHint?: string;
  provideClusterInfo?: boolean;
  interactiveMode?: "Never" | "IfAvailable" | "Always";
}

/** A `users[].user` entry, with file references made absolute. */
export interface KubeUser {
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  token?: string;
  tokenFile?: string;
  as?: string;
  "as-uid"?: string;
  "as-groups"?: string[];
  "as-user-extra"?: Record<string, string[]>;
  username?: string;
  password?: string;
  "auth-provider"?: { name: string; config?: Record<string, string> };
  exec?: ExecConfig;
}

/** A `contexts[].context` entry. */
export interface KubeContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

/** The merged configuration and where it came from. */
export interface KubeconfigData {
  /** The file, the KUBECONFIG list (joined with its separator), or `in-cluster`. */
  source: string;
  clusters: Map<string, KubeCluster>;
  users: Map<string, KubeUser>;
  contexts: Map<string, KubeContext>;
  currentContext?: string;
  /** The merged document, as client-node's KubeConfig reads it (for auth providers). */
  raw: Record<string, unknown>;
}

/** The in-cluster service-account folder. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Name of the context, cluster and user of the in-cluster configuration. */
export const IN_CLUSTER = "in-cluster";

/**
 * Finds and reads the configuration: an explicit path, the files in `KUBECONFIG`, `~/.kube/config`,
 * then the in-cluster service account.
 *
 * @throws {KubeconfigError} When nothing is found or a file cannot be read or understood.
 */
export async function findKubeconfig(explicit: string | undefined): Promise<KubeconfigData> {
  if (explicit !== undefined) return await readFiles([explicit], explicit);
  const env = Deno.env.get("KUBECONFIG");
  if (env) {
    const sep = Deno.build.os === "windows" ? ";" : ":";
    const files = env.split(sep).filter((f) => f && exists(f));
    if (files.length === 0) throw new KubeconfigError(env, "KUBECONFIG names no existing file");
    return await readFiles(files, files.join(sep));
  }
  const home = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE");
  const defaultPath = home ? `${home}/.kube/config` : undefined;
  if (defaultPath && exists(defaultPath)) return await readFiles([defaultPath], defaultPath);
  const inCluster = inClusterConfig(SERVICE_ACCOUNT_DIR);
  if (inCluster) return inCluster;
  throw new KubeconfigError(
    defaultPath ?? "~/.kube/config",
    "no kubeconfig found; set KUBECONFIG, pass a kubeconfig path, or run inside a cluster",
  );
}

/**
 * The configuration of a pod's service account, as client-go's `InClusterConfig` builds it:
 * `KUBERNETES_SERVICE_HOST`/`_PORT`, the token file (re-read as it rotates), `ca.crt` and the
 * pod's namespace. Undefined when not running in a cluster.
 *
 * @param dir The service-account folder.
 * @throws {KubeconfigError} When the variables are set but the port is missing.
 */
export function inClusterConfig(dir: string): KubeconfigData | undefined {
  const host = Deno.env.get("KUBERNETES_SERVICE_HOST");
  if (!host || !exists(`${dir}/token`)) return undefined;
  const port = Deno.env.get("KUBERNETES_SERVICE_PORT");
  if (!port) {
    throw new KubeconfigError(
      IN_CLUSTER,
      "KUBERNETES_SERVICE_HOST is set but KUBERNETES_SERVICE_PORT is not",
    );
  }
  let namespace: string | undefined;
  try {
    namespace = Deno.readTextFileSync(`${dir}/namespace`).trim() || undefined;
  } catch { /* client-go falls back to "default" too */ }
  const cluster: KubeCluster = {
    server: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    ...(exists(`${dir}/ca.crt`) ? { "certificate-authority": `${dir}/ca.crt` } : {}),
  };
  const user: KubeUser = { tokenFile: `${dir}/token` };
  const context: KubeContext = { cluster: IN_CLUSTER, user: IN_CLUSTER, namespace };
  return {
    source: IN_CLUSTER,
    clusters: new Map([[IN_CLUSTER, cluster]]),
    users: new Map([[IN_CLUSTER, user]]),
    contexts: new Map([[IN_CLUSTER, context]]),
    currentContext: IN_CLUSTER,
    raw: {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: IN_CLUSTER, cluster }],
      users: [{ name: IN_CLUSTER, user }],
      contexts: [{ name: IN_CLUSTER, context }],
      "current-context": IN_CLUSTER,
    },
  };
}

async function readFiles(files: string[], source: string): Promise<KubeconfigData> {
  const data: KubeconfigData = {
    source,
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    raw: {},
  };
  for (const file of files) {
    if (!exists(file)) throw new KubeconfigError(file, "file does not exist");
    let text: string;
    try {
      text = Deno.readTextFileSync(file);
    } catch (e) {
      throw new KubeconfigError(file, `cannot read it: ${firstLine(e)}`, { cause: e });
    }
    let doc: unknown;
    try {
      // Common kubeconfigs without loading a YAML library; anything else with the full one.
      const lite = parseKubeconfigYaml(text);
      doc = lite !== undefined ? lite : (await import("../../util/yaml.ts")).fromYaml(text)[0];
    } catch (e) {
      throw new KubeconfigError(file, firstLine(e), { cause: e });
    }
    if (doc === null) doc = undefined;
    if (doc !== undefined && (typeof doc !== "object" || doc === null || Array.isArray(doc))) {
      throw new KubeconfigError(file, "it is not a YAML mapping");
    }
    const obj = (doc ?? {}) as Record<string, unknown>;
    const dir = dirname(file);
    const clusters = entries(file, obj, "clusters", "cluster");
    const users = entries(file, obj, "users", "user");
    const contexts = entries(file, obj, "contexts", "context");
    if (files.length === 1 && clusters.length === 0 && contexts.length === 0) {
      throw new KubeconfigError(file, "it defines no clusters and no contexts");
    }
    for (const [name, c] of clusters) {
      if (data.clusters.has(name)) continue;
      const cluster = { ...c } as KubeCluster;
      resolvePath(cluster, "certificate-authority", dir);
      data.clusters.set(name, cluster);
    }
    for (const [name, u] of users) {
      if (data.users.has(name)) continue;
      const user = { ...u } as KubeUser;
      resolvePath(user, "client-certificate", dir);
      resolvePath(user, "client-key", dir);
      resolvePath(user, "tokenFile", dir);
      // client-go resolves a command only when it is a path (holds a separator), not a name.
      if (user.exec?.command?.includes("/") && !isAbsolute(user.exec.command)) {
        user.exec = { ...user.exec, command: join(dir, user.exec.command) };
      }
      data.users.set(name, user);
    }
    for (const [name, c] of contexts) {
      if (!data.contexts.has(name)) data.contexts.set(name, { ...c } as KubeContext);
    }
    const current = obj["current-context"];
    if (!data.currentContext && typeof current === "string" && current) {
      data.currentContext = current;
    }
  }
  if (data.clusters.size === 0 && data.contexts.size === 0) {
    throw new KubeconfigError(source, "it defines no clusters and no contexts");
  }
  data.raw = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [...data.clusters].map(([name, cluster]) => ({ name, cluster })),
    users: [...data.users].map(([name, user]) => ({ name, user })),
    contexts: [...data.contexts].map(([name, context]) => ({ name, context })),
    ...(data.currentContext ? { "current-context": data.currentContext } : {}),
  };
  return data;
}

/** The named entries of one list (`clusters`, `users`, `contexts`), checked for shape. */
function entries(
  file: string,
  doc: Record<string, unknown>,
  list: string,
  field: string,
): [string, Record<string, unknown>][] {
  const items = doc[list];
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new KubeconfigError(file, `${list} is not a list`);
  return items.map((item, i) => {
    const where = `${list}[${i}]`;
    if (typeof item !== "object" || item === null) {
      throw new KubeconfigError(file, `${where} is not a mapping`);
    }
    const { name, [field]: value } = item as Record<string, unknown>;
    if (typeof name !== "string" || !name) {
      throw new KubeconfigError(file, `${where} has no name`);
    }
    if (value !== undefined && value !== null && (typeof value !== "object")) {
      throw new KubeconfigError(file, `${field} of ${where} ("${name}") is not a mapping`);
    }
    return [name, (value ?? {}) as Record<string, unknown>];
  });
}

// Plain string paths: the client layer stays free of Node built-ins (they cost start-up time).
function isAbsolute(path: string): boolean {
  return path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path) || path.startsWith("\\\\");
}

function dirname(path: string): string {
  const i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return i < 0 ? "." : i === 0 ? "/" : path.slice(0, i);
}

function join(dir: string, path: string): string {
  return `${dir.replace(/[\\/]+$/, "")}/${path.replace(/^\.\//, "")}`;
}

function resolvePath<T extends object>(o: T, key: keyof T & string, dir: string): void {
  const rec = o as Record<string, unknown>;
  const v = rec[key];
  if (typeof v === "string" && v && !isAbsolute(v)) rec[key] = join(dir, v);
}

/** Whether a file exists; a missing read permission is reported instead of "does not exist". */
export function exists(path: string): boolean {
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
