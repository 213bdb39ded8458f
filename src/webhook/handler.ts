/**
 * The HTTP side of admission: a `(Request) => Response` handler that routes AdmissionReviews
 * to {@linkcode Admission}s by path, with a body size limit and a deadline. It is what
 * `startWebhookServer` serves over TLS, and can be mounted on any other server.
 *
 * Guarantees: every request gets a response and the handler never throws. A review whose
 * uid can be read gets a well-formed AdmissionReview (a malformed one is denied with code
 * 400 and a message naming the problem); a body with no readable uid gets HTTP 400 with a
 * plain-text message; a body over the limit gets 413; a handler past the deadline gets HTTP
 * 504 naming the timeout — never `allowed: false`: to the API server that is a failed call,
 * so the webhook's `failurePolicy` decides (`Ignore` admits, `Fail` refuses), as it does
 * when a webhook does not answer in time.
 *
 * The body limit defaults to 7 MiB, controller-runtime's: an UPDATE review carries both
 * `object` and `oldObject`, each up to the API server's 3 MiB request limit and larger once
 * re-encoded as JSON (the API server escapes `<`, `>` and `&` as six bytes each).
 *
 * @module
 */
import { getLogger } from "../util/log.ts";
import { inSpan, type Span } from "../util/trace.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { parseGoDuration } from "../util/duration.ts";
import type { Admission } from "./admission.ts";
import type { KubeObject } from "../core/object.ts";
import {
  type AdmissionRequest,
  type AdmissionResponse,
  parseAdmissionReview,
  reviewOf,
} from "./admission_review.ts";

const log = getLogger(["kubeno", "webhook"]);

/** Options of {@linkcode admissionHandler}. */
export interface AdmissionHandlerOptions {
  /**
   * Largest request body accepted, in bytes; larger ones get 413.
   * @default 7340032 (7 MiB, as controller-runtime: an UPDATE carries two objects)
   */
  maxBodyBytes?: number;
  /**
   * Longest time a request may take, in milliseconds; the API server's `?timeout=` query
   * parameter lowers it.
   * @default 30000
   */
  requestTimeoutMs?: number;
  /**
   * The clock the request deadline runs on.
   * @default realClock
   */
  clock?: Clock;
}

/** The default body limit: 7 MiB, controller-runtime's. */
export const DEFAULT_MAX_BODY_BYTES = 7 * 1024 * 1024;

type Route = (request: AdmissionRequest, signal: AbortSignal) => Promise<AdmissionResponse>;

/**
 * Builds the HTTP handler serving each admission's webhooks on its paths
 * (`/mutate-...` and `/validate-...`).
 *
 * @param webhooks The admissions to serve.
 * @param options Body limit and deadline.
 * @returns A handler for `Deno.serve` or any `Request`/`Response` server.
 * @throws {TypeError} When two webhooks share a path.
 *
 * @example Answer an AdmissionReview
 * ```ts
 * import { admission } from "./admission.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 * import { admissionHandler } from "./handler.ts";
 *
 * const handle = admissionHandler([
 *   admission(ConfigMap, { validate: ({ object }) => object?.data?.x ? "no x" : undefined }),
 * ]);
 * const res = await handle(
 *   new Request("https://webhook/validate--v1-configmap", {
 *     method: "POST",
 *     body: JSON.stringify({
 *       apiVersion: "admission.k8s.io/v1",
 *       kind: "AdmissionReview",
 *       request: {
 *         uid: "u1",
 *         kind: { group: "", version: "v1", kind: "ConfigMap" },
 *         operation: "CREATE",
 *         userInfo: {},
 *         object: { metadata: { name: "a" }, data: { x: "1" } },
 *       },
 *     }),
 *   }),
 * );
 * const review = await res.json();
 * if (review.response.allowed || review.response.status.message !== "no x") throw new Error();
 * ```
 */
export function admissionHandler(
  webhooks: readonly Admission[],
  options: AdmissionHandlerOptions = {},
): (req: Request) => Promise<Response> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxMs = options.requestTimeoutMs ?? 30_000;
  const clock = options.clock ?? realClock;
  const routes = new Map<string, Route>();
  const add = (path: string, route: Route) => {
    if (routes.has(path)) throw new TypeError(`Cannot serve two webhooks on path "${path}"`);
    routes.set(path, route);
  };
  for (const w of webhooks) {
    if (w.mutating) add(w.mutating.path, (r, s) => w.mutate(r, s));
    if (w.validating) add(w.validating.path, (r, s) => w.validate(r, s));
  }

  return async (req: Request): Promise<Response> => {
    try {
      return await serve(req);
    } catch (err) {
      // Only a bug gets here; still answer.
      log.error("Webhook request failed: {message}", { message: String(err), error: err });
      return text(500, `Webhook request failed: ${err instanceof Error ? err.message : err}`);
    }
  };

  async function serve(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const route = routes.get(url.pathname);
    if (!route) {
      await req.body?.cancel().catch(() => {});
      return text(404, `No webhook is served on path "${url.pathname}"`);
    }
    if (req.method !== "POST") {
      await req.body?.cancel().catch(() => {});
      return text(
        405,
        `Method "${req.method}" is not allowed: send a POST with an AdmissionReview`,
      );
    }
    const timeoutMs = Math.min(maxMs, parseTimeout(url.searchParams.get("timeout")) ?? maxMs);
    // A timer cleared with the answer, not AbortSignal.timeout: Deno keeps the process alive
    // until such a signal fires once it has listeners, which delayed every exit after an
    // admission request by up to the API server's timeout.
    const deadline = new AbortController();
    const timer = clock.setTimeout(
      () => deadline.abort(new DOMException("Webhook deadline passed", "TimeoutError")),
      timeoutMs,
    );
    try {
      return await answer(req, url, route, timeoutMs, deadline.signal);
    } finally {
      clock.clearTimeout(timer);
    }
  }

  async function answer(
    req: Request,
    url: URL,
    route: Route,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<Response> {
    const body = await readBody(req, maxBody, signal);
    if (typeof body === "number") {
      const why = {
        400: "AdmissionReview body could not be read",
        408: `AdmissionReview body was not received within ${timeoutMs} ms`,
        413: `AdmissionReview body is larger than the limit of ${maxBody} bytes`,
      };
      return text(body, why[body]);
    }
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(body));
    } catch (err) {
      return text(400, `AdmissionReview body is not valid JSON: ${(err as Error).message}`);
    }
    const parsed = parseAdmissionReview(json);
    if (!parsed.ok) {
      log.warn("Rejected a malformed AdmissionReview on {path}: {message}", {
        path: url.pathname,
        message: parsed.message,
      });
      if (parsed.uid === undefined) return text(400, parsed.message);
      return review({
        uid: parsed.uid,
        allowed: false,
        status: { code: 400, reason: "BadRequest", message: parsed.message },
      });
    }
    const { request } = parsed;
    const object = (request.object ?? request.oldObject) as KubeObject | undefined;
    return inSpan("admission", () => ({
      "kubeno.webhook.path": url.pathname,
      "kubeno.admission.operation": request.operation,
      "kubeno.admission.uid": request.uid,
      "kubeno.admission.dry_run": request.dryRun,
      "k8s.kind": request.kind.kind,
      "k8s.api_version": request.kind.group
        ? `${request.kind.group}/${request.kind.version}`
        : request.kind.version,
      "k8s.namespace.name": request.namespace,
      "k8s.object.name": request.name ?? object?.metadata?.name,
      "k8s.object.uid": object?.metadata?.uid,
      "user.name": request.userInfo?.username,
    }), async (span) => {
      const response = await decide(request, url, route, timeoutMs, signal, span);
      span.set({ "http.response.status_code": response.status });
      return response;
    }, { kind: "server" });
  }

  async function decide(
    request: AdmissionRequest,
    url: URL,
    route: Route,
    timeoutMs: number,
    signal: AbortSignal,
    span: Span,
  ): Promise<Response> {
    // Past the deadline the answer is a failed call, not a denial: the API server's
    // failurePolicy decides.
    const timedOut = new Promise<"timeout">((resolve) => {
      if (signal.aborted) resolve("timeout");
      else signal.addEventListener("abort", () => resolve("timeout"), { once: true });
    });
    const answer = await Promise.race([route(request, signal), timedOut]);
    if (answer === "timeout") {
      log.warn("{operation} {kind} {namespace}/{name} on {path}: no answer within {ms} ms", {
        operation: request.operation,
        kind: request.kind.kind,
        namespace: request.namespace ?? "",
        name: request.name ?? "",
        path: url.pathname,
        ms: timeoutMs,
      });
      return text(504, `Webhook did not answer within ${timeoutMs} ms`);
    }
    log.debug("{operation} {kind} {namespace}/{name} on {path}: allowed={allowed}", {
      operation: request.operation,
      kind: request.kind.kind,
      namespace: request.namespace ?? "",
      name: request.name ?? "",
      path: url.pathname,
      allowed: answer.allowed,
    });
    span.set({ "kubeno.admission.allowed": answer.allowed });
    return review(answer);
  }
}

/**
 * Reads the body up to `max` bytes: 413 when larger, 408 past the deadline, 400 on a read
 * error. Shared with the conversion webhook (`conversion.ts`).
 */
export async function readBody(
  req: Request,
  max: number,
  signal: AbortSignal,
): Promise<Uint8Array | 400 | 408 | 413> {
  const declared = Number(req.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > max) {
    await req.body?.cancel().catch(() => {});
    return 413;
  }
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const onAbort = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > max) {
        await reader.cancel().catch(() => {});
        return 413;
      }
      chunks.push(value);
    }
  } catch {
    return signal.aborted ? 408 : 400;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  if (signal.aborted) return 408;
  const out = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** The API server's `timeout` query parameter (a Go duration) in milliseconds. */
function parseTimeout(v: string | null): number | undefined {
  const ms = v ? parseGoDuration(v) : undefined;
  return ms && ms > 0 ? ms : undefined;
}

function review(response: AdmissionResponse): Response {
  return new Response(JSON.stringify(reviewOf(response)), {
    headers: { "content-type": "application/json" },
  });
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain" } });
}
