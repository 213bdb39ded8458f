// Exec credential plugins (client.authentication.k8s.io v1 and v1beta1), run as client-go runs
// them: the command with its args and env plus KUBERNETES_EXEC_INFO, stdin only when
// interactive, an ExecCredential read from stdout. Caching and re-running live in
// _credentials.ts; this module runs the plugin once and checks what it printed.
import type { ExecConfig, KubeCluster } from "./_kubeconfig_file.ts";
import { CredentialsError } from "./kubeconfig_error.ts";

/** What one run of a plugin produced. */
export interface ExecCredential {
  token?: string;
  cert?: string;
  key?: string;
  /** When the credential expires (ms since the epoch); undefined: it does not. */
  expiresAt?: number;
}

const API_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"];
const EXEC_EXTENSION = "client.authentication.k8s.io/exec";

/**
 * Checks an exec configuration without running it.
 *
 * @returns The problem, one line, or undefined.
 */
export function execConfigProblem(exec: ExecConfig): string | undefined {
  if (!exec.command) return "exec plugin has no command";
  if (!exec.apiVersion || !API_VERSIONS.includes(exec.apiVersion)) {
    return `exec plugin "${exec.command}" has apiVersion "${exec.apiVersion ?? ""}"; use ${
      API_VERSIONS.join(" or ")
    }`;
  }
  const mode = exec.interactiveMode;
  if (mode === undefined && exec.apiVersion === "client.authentication.k8s.io/v1") {
    // client-go's validation: v1 makes the field required (v1beta1 defaults it to IfAvailable).
    return `exec plugin "${exec.command}" has apiVersion client.authentication.k8s.io/v1 but ` +
      "no interactiveMode, which v1 requires; set interactiveMode: Never, IfAvailable or Always";
  }
  if (mode !== undefined && !["Never", "IfAvailable", "Always"].includes(mode)) {
    return `exec plugin "${exec.command}" has interactiveMode "${mode}"; use Never, IfAvailable or Always`;
  }
  return undefined;
}

/**
 * Runs the plugin once and reads its ExecCredential.
 *
 * @param exec The user's exec configuration (checked with {@link execConfigProblem}).
 * @param cluster The cluster, passed to the plugin when `provideClusterInfo` is set.
 * @param caPem The cluster's CA, for the same.
 * @throws {Error} A one-line message: the plugin is missing, failed, or printed no credential.
 */
export async function runExecPlugin(
  exec: ExecConfig,
  cluster: KubeCluster,
  caPem: string | undefined,
): Promise<ExecCredential> {
  const command = exec.command!;
  const mode = exec.interactiveMode ?? "IfAvailable";
  const terminal = Deno.stdin.isTerminal();
  if (mode === "Always" && !terminal) {
    throw new CredentialsError(
      `exec plugin "${command}" needs a terminal (interactiveMode: Always) and stdin is not one`,
    );
  }
  const interactive = mode !== "Never" && terminal;
  const info = {
    apiVersion: exec.apiVersion,
    kind: "ExecCredential",
    spec: {
      interactive,
      ...(exec.provideClusterInfo ? { cluster: clusterInfo(cluster, caPem) } : {}),
    },
  };
  const env: Record<string, string> = { KUBERNETES_EXEC_INFO: JSON.stringify(info) };
  for (const e of exec.env ?? []) env[e.name] = e.value;
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(command, {
      args: exec.args ?? [],
      env,
      stdin: interactive ? "inherit" : "null",
      stdout: "piped",
      stderr: interactive ? "inherit" : "piped",
    }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      // The whole hint, its lines joined: AKS's and GKE's put the link on a later line.
      const hint = exec.installHint?.split("\n").map((l) => l.trim()).filter(Boolean).join(" ");
      throw new CredentialsError(
        `exec plugin "${command}" not found${hint ? `: ${hint}` : "; install it"}`,
      );
    }
    if (e instanceof Deno.errors.NotCapable) {
      throw new CredentialsError(
        `this program may not run the exec credential plugin "${command}" its kubeconfig names; ` +
          `run it with --allow-run=${command} (a binary: kubeno compile --allow-run=${command})`,
      );
    }
    throw new CredentialsError(`cannot run exec plugin "${command}": ${oneLine(e)}`);
  }
  const dec = new TextDecoder();
  if (!out.success) {
    const stderr = interactive ? "" : lastLine(dec.decode(out.stderr));
    throw new CredentialsError(
      `exec plugin "${command}" failed with exit code ${out.code}${stderr ? `: ${stderr}` : ""}`,
    );
  }
  return parseExecCredential(command, exec.apiVersion!, dec.decode(out.stdout));
}

/** Reads the ExecCredential a plugin printed. */
export function parseExecCredential(
  command: string,
  apiVersion: string,
  stdout: string,
): ExecCredential {
  let cred: {
    apiVersion?: string;
    kind?: string;
    status?: {
      token?: string;
      clientCertificateData?: string;
      clientKeyData?: string;
      expirationTimestamp?: string;
    };
  };
  try {
    cred = JSON.parse(stdout);
  } catch (e) {
    throw new CredentialsError(
      `exec plugin "${command}" printed no ExecCredential JSON: ${oneLine(e)}`,
    );
  }
  if (cred?.kind !== "ExecCredential" || cred.apiVersion !== apiVersion) {
    throw new CredentialsError(
      `exec plugin "${command}" printed apiVersion "${cred?.apiVersion}" kind "${cred?.kind}"; ` +
        `expected an ExecCredential of ${apiVersion}`,
    );
  }
  const s = cred.status ?? {};
  const hasCert = Boolean(s.clientCertificateData || s.clientKeyData);
  if (hasCert && !(s.clientCertificateData && s.clientKeyData)) {
    throw new CredentialsError(
      `exec plugin "${command}" returned only one of clientCertificateData and clientKeyData`,
    );
  }
  if (!s.token && !hasCert) {
    throw new CredentialsError(
      `exec plugin "${command}" returned neither a token nor a certificate and key`,
    );
  }
  let expiresAt: number | undefined;
  if (s.expirationTimestamp) {
    expiresAt = Date.parse(s.expirationTimestamp);
    if (Number.isNaN(expiresAt)) {
      throw new CredentialsError(
        `exec plugin "${command}" returned expirationTimestamp "${s.expirationTimestamp}", which is not RFC 3339`,
      );
    }
  }
  return {
    token: s.token || undefined,
    cert: s.clientCertificateData || undefined,
    key: s.clientKeyData || undefined,
    expiresAt,
  };
}

function clusterInfo(cluster: KubeCluster, caPem: string | undefined): Record<string, unknown> {
  const config = cluster.extensions?.find((e) => e.name === EXEC_EXTENSION)?.extension;
  return {
    server: cluster.server,
    ...(cluster["tls-server-name"] ? { "tls-server-name": cluster["tls-server-name"] } : {}),
    ...(cluster["insecure-skip-tls-verify"] ? { "insecure-skip-tls-verify": true } : {}),
    ...(caPem ? { "certificate-authority-data": btoa(caPem) } : {}),
    ...(cluster["proxy-url"] ? { "proxy-url": cluster["proxy-url"] } : {}),
    ...(cluster["disable-compression"] ? { "disable-compression": true } : {}),
    ...(config !== undefined ? { config } : {}),
  };
}

function oneLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0].trim();
}

function lastLine(text: string): string {
  return text.split("\n").map((l) => l.trim()).filter(Boolean).at(-1) ?? "";
}
