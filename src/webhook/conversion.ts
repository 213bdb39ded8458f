/**
 * The conversion webhook: a `(Request) => Response` handler answering the API server's
 * ConversionReviews (`apiextensions.k8s.io/v1`) at {@linkcode CONVERSION_PATH} with the
 * conversion functions of multi-version resources (`defineResource({ versions })`). The
 * operator's HTTPS webhook server mounts it beside the admission webhooks; a CRD's
 * `spec.conversion.webhook.clientConfig` points at it (see `conversion_config.ts`).
 *
 * Flow: the body is read (up to a limit) and parsed; each object of the request is routed by
 * its group and kind to its resource, which converts it to `desiredAPIVersion` through the
 * hub. The response holds the converted objects in request order, or — when any object fails
 * — `result.status: Failure` with a message naming the object and the reason: the API server
 * then fails the read or write that needed it and stores nothing.
 *
 * Guarantees: every request gets a response and the handler never throws. A review whose
 * uid can be read gets a well-formed ConversionReview (a malformed one fails with a message
 * naming the problem); a body with no readable uid gets HTTP 400 with a plain-text message; a
 * body over the limit gets 413.
 *
 * @module
 */
import { getLogger } from "../util/log.ts";
import { type Clock, realClock } from "../util/clock.ts";
import type { KubeObject } from "../core/object.ts";
import { groupOf } from "../core/api_version.ts";
import { readBody } from "./handler.ts";
import { inSpan } from "../util/trace.ts";

const log = getLogger(["kubeno", "webhook"]);

/** The path the conversion webhook is served on, as controller-runtime serves it. */
export const CONVERSION_PATH = "/convert";

/**
 * The body limit: 64 MiB. One ConversionReview carries a whole list response (an informer's
 * first list of every object of a kind), so it is far larger than an admission body.
 */
export const DEFAULT_MAX_CONVERSION_BYTES = 64 * 1024 * 1024;

/** What the conversion webhook needs of a resource (a `defineResource` result has it). */
export interface ConvertibleResource {
  /** API group. */
  readonly group: string;
  /** Kind. */
  readonly kind: string;
  /** Lower-case plural; names the CRD `<plural>.<group>`. */
  readonly plural: string;
  /** Every version, the hub first. */
  readonly versions: readonly string[];
  /**
   * Converts one object to another version of the resource.
   * @param object The object.
   * @param to The desired `apiVersion`.
   * @returns The converted object.
   */
  convert(object: KubeObject, to: string): KubeObject;
}

/** The request of a ConversionReview. */
export interface ConversionRequest {
  /** Identifies the review; echoed in the response. */
  uid: string;
  /** The `apiVersion` every object is converted to, e.g. `apps.kubeno.dev/v1`. */
  desiredAPIVersion: string;
  /** The objects to convert. */
  objects: KubeObject[];
}

/** The response of a ConversionReview. */
export interface ConversionResponse {
  /** The request's uid. */
  uid: string;
  /** `Success`, or `Failure` with a message the API server returns to its caller. */
  result: { status: "Success" | "Failure"; message?: string };
  /** The converted objects, in request order, on success. */
  convertedObjects?: KubeObject[];
}

/** An `apiextensions.k8s.io/v1` ConversionReview. */
export interface ConversionReview {
  /** `apiextensions.k8s.io/v1`. */
  apiVersion: "apiextensions.k8s.io/v1";
  /** `ConversionReview`. */
  kind: "ConversionReview";
  /** Set in requests. */
  request?: ConversionRequest;
  /** Set in responses. */
  response?: ConversionResponse;
}

/** Options of {@linkcode conversionHandler}. */
export interface ConversionHandlerOptions {
  /**
   * Largest request body accepted, in bytes; larger ones get 413.
   * @default 67108864 (64 MiB: a review carries a whole list response)
   */
  maxBodyBytes?: number;
  /**
   * Longest time reading a body may take, in milliseconds.
   * @default 30000
   */
  requestTimeoutMs?: number;
  /**
   * The clock the body deadline runs on.
   * @default realClock
   */
  clock?: Clock;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Builds the handler of the conversion webhook for `resources`.
 *
 * @param resources Multi-version resources, from `defineResource({ versions })`.
 * @param options Body limit and deadline.
 * @returns A handler for `Deno.serve` or any `Request`/`Response` server; it answers on
 * {@linkcode CONVERSION_PATH} only (404 elsewhere).
 * @throws {TypeError} When two resources share a group and kind.
 *
 * @example Convert an object to another version
 * ```ts
 * import { z } from "../util/zod.ts";
 * import { defineResource } from "../schema/define_resource.ts";
 * import { conversionHandler } from "./conversion.ts";
 *
 * const V1alpha1 = defineResource({
 *   group: "example.com", version: "v1alpha1", kind: "Widget",
 *   spec: z.object({ size: z.string() }),
 * });
 * const Widget = defineResource({
 *   group: "example.com", version: "v1", kind: "Widget",
 *   spec: z.object({ size: z.int() }),
 *   versions: [{
 *     resource: V1alpha1,
 *     toHub: (old) => ({ spec: { size: Number(old.spec.size) } }),
 *     fromHub: (w) => ({ spec: { size: String(w.spec.size) } }),
 *   }],
 * });
 * const handle = conversionHandler([Widget]);
 * const res = await handle(new Request("https://webhook/convert", {
 *   method: "POST",
 *   body: JSON.stringify({
 *     apiVersion: "apiextensions.k8s.io/v1",
 *     kind: "ConversionReview",
 *     request: {
 *       uid: "u1",
 *       desiredAPIVersion: "example.com/v1",
 *       objects: [{ apiVersion: "example.com/v1alpha1", kind: "Widget", metadata: { name: "a" }, spec: { size: "3" } }],
 *     },
 *   }),
 * }));
 * const review = await res.json();
 * if (review.response.convertedObjects[0].spec.size !== 3) throw new Error();
 * ```
 */
export function conversionHandler(
  resources: readonly ConvertibleResource[],
  options: ConversionHandlerOptions = {},
): (req: Request) => Promise<Response> {
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_CONVERSION_BYTES;
  const maxMs = options.requestTimeoutMs ?? 30_000;
  const clock = options.clock ?? realClock;
  const byKind = new Map<string, ConvertibleResource>();
  for (const r of resources) {
    const key = `${r.kind}.${r.group}`;
    if (byKind.has(key)) throw new TypeError(`Cannot serve two conversions of "${key}"`);
    byKind.set(key, r);
  }
  const served = [...byKind.keys()].join(", ") || "none";
  const seen = new SeenOnce(4096);

  return async (req: Request): Promise<Response> => {
    try {
      return await serve(req);
    } catch (err) {
      // Only a bug gets here; still answer.
      log.error("Conversion request failed: {message}", { message: String(err), error: err });
      return text(500, `Conversion request failed: ${err instanceof Error ? err.message : err}`);
    }
  };

  async function serve(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    if (path !== CONVERSION_PATH) {
      await req.body?.cancel().catch(() => {});
      return text(404, `No webhook is served on path "${path}"`);
    }
    if (req.method !== "POST") {
      await req.body?.cancel().catch(() => {});
      return text(
        405,
        `Method "${req.method}" is not allowed: send a POST with a ConversionReview`,
      );
    }
    const deadline = new AbortController();
    const timer = clock.setTimeout(() => deadline.abort(), maxMs);
    let body: Awaited<ReturnType<typeof readBody>>;
    try {
      body = await readBody(req, maxBody, deadline.signal);
    } finally {
      clock.clearTimeout(timer);
    }
    if (typeof body === "number") {
      const why = {
        400: "ConversionReview body could not be read",
        408: `ConversionReview body was not received within ${maxMs} ms`,
        413: `ConversionReview body is larger than the limit of ${maxBody} bytes`,
      };
      return text(body, why[body]);
    }
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(body));
    } catch (err) {
      return text(400, `ConversionReview body is not valid JSON: ${(err as Error).message}`);
    }
    const parsed = parseConversionReview(json);
    if (!parsed.ok) {
      log.warn("Rejected a malformed ConversionReview: {message}", { message: parsed.message });
      if (parsed.uid === undefined) return text(400, parsed.message);
      return review({ uid: parsed.uid, result: { status: "Failure", message: parsed.message } });
    }
    const { uid, desiredAPIVersion, objects } = parsed.request;
    return inSpan("conversion", {
      "kubeno.conversion.uid": uid,
      "kubeno.conversion.desired_api_version": desiredAPIVersion,
      "kubeno.conversion.objects": objects.length,
    }, (span) => {
      const res = convertAll(uid, desiredAPIVersion, objects);
      span.set({ "http.response.status_code": res.status });
      return res;
    }, { kind: "server" });
  }

  function convertAll(
    uid: string,
    desiredAPIVersion: string,
    objects: readonly KubeObject[],
  ): Response {
    const converted: KubeObject[] = [];
    const failed: string[] = [];
    for (const [i, object] of objects.entries()) {
      const o = object as Partial<KubeObject>;
      const group = typeof o.apiVersion === "string" ? groupOf(o.apiVersion) : "";
      const res = byKind.get(`${o.kind}.${group}`);
      if (!res) {
        return failure(
          uid,
          `ConversionReview request.objects[${i}] has apiVersion "${o.apiVersion}" and kind "${o.kind}", which this webhook does not convert (it converts ${served})`,
        );
      }
      try {
        converted.push(res.convert(object, desiredAPIVersion));
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        failed.push(message);
        // The API server retries a failing read or watch many times a second: say it once per
        // object, change and target version.
        const m = o.metadata ?? {};
        if (
          seen.first(`${o.kind}.${group}/${m.namespace}/${m.name}@${m.resourceVersion}`, message)
        ) {
          log.warn(
            "Conversion to {apiVersion} failed: {message} (logged once per object and change; " +
              "every read of it at {apiVersion} fails until it is fixed or deleted)",
            { apiVersion: desiredAPIVersion, message },
          );
        }
      }
    }
    if (failed.length) {
      const shown = failed.slice(0, 5).join("; ");
      const more = failed.length > 5 ? `; and ${failed.length - 5} more` : "";
      return review({ uid, result: { status: "Failure", message: `${shown}${more}` } });
    }
    log.debug("Converted {count} objects to {apiVersion}", {
      count: converted.length,
      apiVersion: desiredAPIVersion,
    });
    return review({ uid, result: { status: "Success" }, convertedObjects: converted });
  }
}

/** Remembers the last `limit` keys, so that a repeated failure is logged once. */
class SeenOnce {
  readonly #keys = new Map<string, string>();
  readonly #limit: number;
  constructor(limit: number) {
    this.#limit = limit;
  }
  /** True the first time `key` is seen with `value` (a changed message counts as new). */
  first(key: string, value: string): boolean {
    if (this.#keys.get(key) === value) return false;
    this.#keys.delete(key);
    this.#keys.set(key, value);
    if (this.#keys.size > this.#limit) this.#keys.delete(this.#keys.keys().next().value!);
    return true;
  }
}

function failure(uid: string, message: string): Response {
  log.warn("Conversion failed: {message}", { message });
  return review({ uid, result: { status: "Failure", message } });
}

/** A parsed ConversionReview, or why it is malformed (with its uid when one was readable). */
export type ParsedConversionReview =
  | { ok: true; request: ConversionRequest }
  | { ok: false; uid?: string; message: string };

/**
 * Checks a ConversionReview body; never throws.
 *
 * @param body The parsed JSON.
 * @returns The request, or a message naming what is wrong.
 *
 * @example A review without objects
 * ```ts
 * import { parseConversionReview } from "./conversion.ts";
 * const r = parseConversionReview({
 *   apiVersion: "apiextensions.k8s.io/v1", kind: "ConversionReview",
 *   request: { uid: "u", desiredAPIVersion: "example.com/v1" },
 * });
 * if (r.ok || r.uid !== "u") throw new Error();
 * ```
 */
export function parseConversionReview(body: unknown): ParsedConversionReview {
  if (!isRecord(body)) return { ok: false, message: "ConversionReview must be a JSON object" };
  const request = body.request;
  if (!isRecord(request)) return { ok: false, message: "ConversionReview has no request" };
  const uid = request.uid;
  if (typeof uid !== "string" || !uid) {
    return { ok: false, message: "ConversionReview request has no uid" };
  }
  const bad = (message: string): ParsedConversionReview => ({ ok: false, uid, message });
  if (body.apiVersion !== "apiextensions.k8s.io/v1" || body.kind !== "ConversionReview") {
    return bad(
      `Unsupported ConversionReview apiVersion ${JSON.stringify(body.apiVersion) ?? "(none)"} ` +
        `and kind ${
          JSON.stringify(body.kind) ?? "(none)"
        }: send apiextensions.k8s.io/v1 ConversionReview`,
    );
  }
  const desired = request.desiredAPIVersion;
  if (typeof desired !== "string" || !desired.includes("/")) {
    return bad(
      `ConversionReview request.desiredAPIVersion must be "<group>/<version>", not ${
        JSON.stringify(desired) ?? "(none)"
      }`,
    );
  }
  if (!Array.isArray(request.objects)) {
    return bad("ConversionReview request.objects must be a list of objects");
  }
  for (const [i, o] of request.objects.entries()) {
    if (!isRecord(o) || !isRecord(o.metadata)) {
      return bad(`ConversionReview request.objects[${i}] must be an object with metadata`);
    }
  }
  return {
    ok: true,
    request: { uid, desiredAPIVersion: desired, objects: request.objects as KubeObject[] },
  };
}

function review(response: ConversionResponse): Response {
  const body: ConversionReview = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "ConversionReview",
    response,
  };
  return new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
}

function text(status: number, message: string): Response {
  return new Response(message, { status, headers: { "content-type": "text/plain" } });
}
