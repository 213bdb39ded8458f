/**
 * The HTTP side of admission: a `(Request) => Response` handler that routes AdmissionReviews
 * to {@linkcode Admission}s by path, with a body size limit and a deadline. It is what
 * `startWebhookServer` serves over TLS, and can be mounted on any other server.
 *
 * Guarantees: every request gets a response and the handler never throws. A review whose
 * uid can be read gets a well-formed AdmissionReview (a malformed one is denied with code
 * 400 and a message naming the problem); a body with no readable uid gets HTTP 400 with a
 * plain-text message; a body over the limit gets 413; a handler past the deadline is
 * answered with a denial naming the timeout.
 *
 * @module
 */
import { getLogger } from "../util/log.ts";
import type { Admission } from "./admission.ts";
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
   * @default 3145728 (3 MiB, the API server's own limit for objects is 3 MiB)
   */
  maxBodyBytes?: number;
  /**
   * Longest time a request may take, in milliseconds; the API server's `?timeout=` query
   * parameter lowers it.
   * @default 30000
   */
  requestTimeoutMs?: number;
}

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
  const maxBody = options.maxBodyBytes ?? 3 * 1024 * 1024;
  const maxMs = options.requestTimeoutMs ?? 30_000;
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
    const signal = AbortSignal.timeout(timeoutMs);
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
    const timedOut = new Promise<AdmissionResponse>((resolve) => {
      const onAbort = () =>
        resolve({
          uid: request.uid,
          allowed: false,
          status: {
            code: 504,
            reason: "Timeout",
            message: `Webhook did not answer within ${timeoutMs} ms`,
          },
        });
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
    const answer = await Promise.race([route(request, signal), timedOut]);
    log.debug("{operation} {kind} {namespace}/{name} on {path}: allowed={allowed}", {
      operation: request.operation,
      kind: request.kind.kind,
      namespace: request.namespace ?? "",
      name: request.name ?? "",
      path: url.pathname,
      allowed: answer.allowed,
    });
    return review(answer);
  }
}

/** Reads the body up to `max` bytes: 413 when larger, 408 past the deadline, 400 on a read error. */
async function readBody(
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

/** Parses Go durations as the API server sends them (`10s`, `1m30s`, `500ms`). */
function parseTimeout(v: string | null): number | undefined {
  if (!v) return undefined;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = v;
  while (rest) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)/.exec(rest);
    if (!m) return undefined;
    total += Number(m[1]) * units[m[2]];
    rest = rest.slice(m[0].length);
  }
  return total > 0 ? total : undefined;
}

function review(response: AdmissionResponse): Response {
  return new Response(JSON.stringify(reviewOf(response)), {
    headers: { "content-type": "application/json" },
  });
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain" } });
}
