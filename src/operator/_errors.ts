// How an operator program reports a failure: one line naming what went wrong and what to do.
// Errors users cause (unreachable cluster, bad kubeconfig, missing permission) never show a
// stack; unexpected ones do, and only with --log-level debug.
import {
  ApiError,
  ConnectionError,
  isCertificateRejected,
  isForbidden,
  isUnauthorized,
} from "../client/errors/api_error.ts";
import { KubeconfigError } from "../client/kubeconfig/kubeconfig_error.ts";

/** Error classes whose message is complete for a user: shown as they are. */
const KNOWN = new Set([
  "ApiError",
  "ConnectionError",
  "KubeconfigError",
  "UsageError",
  "CrdNotEstablishedError",
  "CrdNotDeletedError",
  "ResourceValidationError",
  "LeadershipLostError",
  "StartupError",
  "ApiServerUnavailableError",
  "CertificateDirError",
  "StorageMigrationError",
]);

const UNREACHABLE_HINT =
  "check that the cluster is running and that --kubeconfig/--context point at it";

/**
 * The lines to print for an error that ended a command.
 *
 * @param err What was thrown.
 * @param debug Whether `--log-level debug` was given.
 * @returns The first line (the message and a hint) and, for unexpected errors in debug mode,
 * the stack.
 */
export function describeError(err: unknown, debug: boolean): string[] {
  const line = oneLine(err instanceof Error ? err.message : String(err)) || "Unknown error";
  const hint = hintFor(err);
  const first = hint ? `${line}; ${hint}` : line;
  if (known(err) || !debug || !(err instanceof Error) || !err.stack) return [first];
  return [first, err.stack];
}

function hintFor(err: unknown): string | undefined {
  if (isCertificateRejected(err)) {
    return "the server's certificate is not trusted: check the kubeconfig's " +
      "certificate-authority(-data), or that --context names this cluster";
  }
  if (err instanceof ConnectionError) return UNREACHABLE_HINT;
  if (err instanceof Error && err.name === "ApiServerUnavailableError") {
    const api = apiCause(err.cause);
    return (api instanceof ApiError ? hintFor(api) : undefined) ?? UNREACHABLE_HINT;
  }
  if (err instanceof Error && err.name === "StartupError") {
    const api = apiCause(err.cause);
    return api ? hintFor(api) : undefined;
  }
  if (err instanceof KubeconfigError) return kubeconfigHint(err);
  if (err instanceof Deno.errors.AddrInUse) {
    return "stop what holds the port, or pass another address (--metrics-bind-address, " +
      "--health-probe-bind-address, --webhook-port)";
  }
  if (err instanceof Error && err.name === "CertificateDirError") {
    return "--webhook-cert-path takes a directory holding tls.crt and tls.key";
  }
  if (isUnauthorized(err)) return "the kubeconfig's credentials were rejected; renew them";
  if (isForbidden(err)) {
    return 'grant the permission (see the "manifests" command\'s RBAC) or use another --context';
  }
  if (!known(err)) return "this is a bug; rerun with --log-level debug for the stack";
  return undefined;
}

/** What to do about a kubeconfig that cannot be used, by what is wrong with it. */
function kubeconfigHint(err: KubeconfigError): string | undefined {
  const m = err.message;
  // There is no file: the message already says what to do, and "fix the file" would not fit.
  if (/no kubeconfig found/.test(m)) return undefined;
  if (/context "[^"]*" does not exist|no current-context/.test(m)) {
    return "pass one of its contexts with --context";
  }
  if (/does not exist|names no existing file|no such file/i.test(m)) {
    return "pass --kubeconfig PATH or set KUBECONFIG";
  }
  // The file is fine; the program it names is missing (the message carries its installHint).
  if (/exec plugin "[^"]*" not found/.test(m)) return "install the plugin or put it on PATH";
  return "fix the file, or pass another one with --kubeconfig";
}

/** The first `ApiError` or `ConnectionError` down a chain of causes (e.g. under a `WatchError`). */
function apiCause(err: unknown): ApiError | ConnectionError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof ApiError || e instanceof ConnectionError) return e;
  }
  return undefined;
}

/** Errors whose message says all a user needs: kubeno's own and the runtime's I/O errors. */
function known(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return KNOWN.has(err.name) || err instanceof ApiError || err instanceof ConnectionError ||
    err instanceof KubeconfigError ||
    Object.values(Deno.errors).some((c) => err instanceof c);
}

function oneLine(text: string): string {
  // A parser's message may end with ":" before a code excerpt that was cut off.
  return text.split("\n").map((s) => s.trim()).filter(Boolean).join(" ").replace(/:$/, "");
}
