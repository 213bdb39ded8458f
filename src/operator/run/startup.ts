// How `run` starts against an API server that may not be there yet.
//
// 1. `awaitApiServer`: lists each controller's kind, and each kind marked `required`, once
//    (limit 1); other kinds a controller caches may be missing (optional kinds, see
//    `ServedKinds`). Unreachable or not ready
//    (refused connections, timeouts, 429, 5xx, 503 "before all known HTTP paths have been
//    installed") is waited out with back-off (`ApiServerWait`) while `/healthz` passes and
//    `/readyz` fails. What only a person can fix ends start-up at once with one line: the
//    kind is not served (404: its CRD is not installed), the credentials are refused (401),
//    RBAC forbids the list (403). A starting API server accepts requests before its RBAC
//    caches are synced and may refuse them meanwhile (kubernetes/kubernetes#121635), so a
//    401, 403 or 404 counts only when the server's own `/readyz` passes. A list that fails in
//    the CRD's conversion webhook shows the kind is served: that webhook is this operator's
//    own, served after this step, so waiting for it here would wait for ever.
// 2. `cacheSyncDeadline`: the informers then retry on their own (as client-go's reflectors
//    do); if they have not all synced when the same start-up deadline passes, start-up fails
//    with one line naming what did not sync and why, like controller-runtime's
//    `CacheSyncTimeout`.
import { ApiError, ConnectionError, isNotFound } from "../../client/errors/api_error.ts";
import type { Client } from "../../client/client.ts";
import type { Resource } from "../../core/resource.ts";
import type { Informer } from "../../runtime/cache/informer.ts";
import { type Clock, realClock } from "../../util/clock.ts";
import type { OperatorDefinition } from "../command/command.ts";
import { type ApiServerWait, seconds } from "../command/api_server_wait.ts";
import { KubenoError } from "../../util/error.ts";

/**
 * Start-up cannot go on: a kind is not installed, or the caches did not sync in time. The
 * message names the fix; `cause` is the underlying failure.
 */
export class StartupError extends KubenoError {
  /**
   * @param message The one-line message.
   * @param options `cause`: the underlying failure.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StartupError";
  }
}

/**
 * Waits until every controller's kind can be listed, retrying while the API server is
 * unavailable or not ready.
 *
 * @param client The operator's client.
 * @param def The operator: its name, controllers and the CRDs it installs.
 * @param namespaces The watched namespaces; empty for all.
 * @param wait The start-up wait, which holds the deadline and logs the waiting.
 * @throws {StartupError} When a controller's kind, or a kind marked `required`, is not served
 * (CRD not installed).
 * @throws {ApiError} For 401, 403 and other refusals the API server means.
 * @throws {ApiServerUnavailableError} When the deadline passes first.
 * @throws The wait's signal's reason when it aborts.
 */
export async function awaitApiServer(
  client: Pick<Client, "list" | "request">,
  def: Pick<OperatorDefinition, "name" | "controllers" | "installs">,
  namespaces: readonly string[],
  wait: ApiServerWait,
): Promise<void> {
  const seen = new Set<string>();
  // The primaries, and the kinds marked `required`; other kinds may be missing (optional).
  const kinds = def.controllers.flatMap((c) => [
    { resource: c.resource, namespaces: undefined as readonly string[] | undefined },
    ...(c.caches ?? []).filter((k) => k.required && k.resource !== c.resource),
  ]);
  for (const kind of kinds) {
    const res = kind.resource;
    const scoped = kind.namespaces?.length ? kind.namespaces : namespaces;
    const where = res.namespaced && scoped.length ? scoped : [undefined];
    for (const namespace of where) {
      const key = `${res.apiVersion}/${res.plural}/${namespace ?? ""}`;
      if (seen.has(key)) continue;
      seen.add(key);
      try {
        await wait.run(
          (signal) =>
            client.list(res, { namespace, limit: 1, signal }).catch((err) => {
              if (isConversionFailure(err)) return undefined;
              throw err;
            }),
          async (err, signal) =>
            isRefusal(err) && !(await apiServerReady(client, signal))
              ? `${err.code} ${err.reason} while the API server is not ready`
              : undefined,
        );
      } catch (err) {
        if (isNotFound(err)) continue; // e.g. a watched namespace that does not exist yet
        if (err instanceof ApiError && err.resourceUnknown) throw notServed(def, res, err);
        throw err;
      }
    }
  }
}

/**
 * Waits until a fleet operator's hub answers its `/readyz`, retrying while it is unreachable
 * or not ready, as {@linkcode awaitApiServer} does for one cluster. The members are not
 * waited for: each is engaged on its own.
 *
 * @param hub The hub's client.
 * @param wait The start-up wait, which holds the deadline and logs the waiting.
 * @throws {ApiServerUnavailableError} When the deadline passes first.
 * @throws The wait's signal's reason when it aborts.
 */
export async function awaitHub(hub: Pick<Client, "request">, wait: ApiServerWait): Promise<void> {
  await wait.run((signal) =>
    hub.request("GET", "/readyz", { signal }).catch((err) => {
      // `/readyz` answers "ok", not JSON: that is the answer we wait for.
      if (err instanceof ConnectionError && /invalid JSON/.test(err.message)) return;
      throw err;
    })
  );
}

/**
 * The API server could not convert stored objects through the CRD's conversion webhook
 * (`conversion webhook for <gvk> failed: ...`), which the operator itself serves.
 */
function isConversionFailure(err: unknown): boolean {
  return err instanceof ApiError && err.code >= 500 && /conversion webhook for /.test(err.message);
}

/** 401, 403, or a 404 for the whole resource: real unless the server is still starting. */
function isRefusal(err: unknown): err is ApiError {
  return err instanceof ApiError &&
    (err.code === 401 || err.code === 403 || (err.code === 404 && err.resourceUnknown));
}

/**
 * Whether the API server's `/readyz` passes. `/readyz` answers `ok` as plain text, which the
 * client's JSON reader reports as a `ConnectionError` about invalid JSON: that is a 2xx. A
 * `/readyz` this user may not read (401/403) cannot tell, so it counts as ready: the refusal
 * then stands.
 */
async function apiServerReady(
  client: Pick<Client, "request">,
  signal: AbortSignal,
): Promise<boolean> {
  try {
    await client.request("GET", "/readyz", { signal });
    return true;
  } catch (err) {
    if (err instanceof ApiError) return err.code === 401 || err.code === 403;
    return err instanceof ConnectionError && /invalid JSON/.test(err.message);
  }
}

function notServed(
  def: Pick<OperatorDefinition, "name" | "installs">,
  res: Resource,
  cause: ApiError,
): StartupError {
  const what = `${res.kind} (${res.apiVersion})`;
  const crd = def.installs.find((i) =>
    i.resource.apiVersion === res.apiVersion && i.resource.kind === res.kind
  )?.crd.metadata.name;
  return new StartupError(
    crd
      ? `The Kubernetes API server does not serve ${what}: its CustomResourceDefinition "${crd}" is not installed; run "${def.name} install" first`
      : `The Kubernetes API server does not serve ${what}; install the API that provides it or run against a cluster that has it`,
    { cause },
  );
}

/** Options of {@linkcode cacheSyncDeadline}. */
export interface CacheSyncDeadlineOptions {
  /** How long until the deadline, in milliseconds. */
  remainingMs: number;
  /** The whole start-up timeout and its flag, for the message: `--startup-timeout=2m`. */
  setting: string;
  /** Whether every cache has synced. */
  synced(): boolean;
  /** The informers, to name those that have not synced. */
  informers(): Iterable<Informer<any>> | undefined;
  /** Called once, at the deadline, when the caches have not synced. */
  onExpired(error: StartupError): void;
  /**
   * Time source.
   * @default realClock
   */
  clock?: Clock;
}

/**
 * Fails start-up when the caches have not synced by the deadline.
 *
 * @param options The time left, the readiness and informers to check, and what to do.
 * @returns A disposable that cancels the deadline.
 */
export function cacheSyncDeadline(options: CacheSyncDeadlineOptions): Disposable {
  const clock = options.clock ?? realClock;
  const timer = clock.setTimeout(() => {
    if (options.synced()) return;
    const pending = [...options.informers() ?? []].filter((inf) => !inf.hasSynced);
    const first = pending.find((inf) => inf.error)?.error;
    const detail = pending.length
      ? pending.map((inf) =>
        inf.error?.message ?? `${inf.resource.kind} (${inf.resource.apiVersion}): no list completed`
      ).join("; ")
      : "the controllers have not started";
    options.onExpired(
      new StartupError(
        `Caches did not sync within the start-up timeout (${options.setting}): ${detail}`,
        { cause: first },
      ),
    );
  }, options.remainingMs);
  return { [Symbol.dispose]: () => clock.clearTimeout(timer) };
}

/**
 * `--startup-timeout=2m`: how the start-up deadline was set, for messages.
 *
 * @param timeoutMs The timeout.
 * @returns The flag and its value.
 */
export function startupSetting(timeoutMs: number): string {
  return `--startup-timeout=${seconds(timeoutMs)}`;
}
