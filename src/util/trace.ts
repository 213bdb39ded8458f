/**
 * Tracing for kubeno: the one module that knows OpenTelemetry's API (`@opentelemetry/api`).
 * Everything else starts spans and carries their links through the small functions here, so
 * the machinery never imports OpenTelemetry and replacing it is a change to this file alone.
 *
 * Deno exports the spans itself: run the operator with `OTEL_DENO=true` (and
 * `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`) and Deno registers its tracer provider
 * and context manager before any user code runs; `fetch` and `Deno.serve` get their own
 * spans, parented under the span active here.
 *
 * ## Guarantees
 *
 * - No cost when tracing is off: `@opentelemetry/api` is not even loaded until a provider is
 *   registered (at start with `OTEL_DENO=true`); {@linkcode tracing} is then one read of the
 *   API's global registry, and every other function returns at once (no span, no context, no
 *   allocation beyond the call) when it is `false`.
 * - A provider a program registers after kubeno loaded is seen once the API has loaded: from
 *   the next turn of the event loop after the first {@linkcode tracing} call that finds it.
 * - A span started by {@linkcode inSpan} ends exactly once, when `fn` returns or its promise
 *   settles; a thrown error or rejection is recorded on it and sets its status to error.
 *
 * @module
 */
import type {
  Attributes,
  Link,
  Span as OtelSpan,
  SpanContext,
  Tracer,
  TracerProvider,
} from "@opentelemetry/api";

type Api = typeof import("@opentelemetry/api");

// Where @opentelemetry/api keeps what is registered (major version 1): Deno's provider and
// context manager with OTEL_DENO=true (before any user code runs), or a program's SDK.
const REGISTRY = Symbol.for("opentelemetry.js.api.1");

function registered(): boolean {
  const g = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[REGISTRY];
  return g?.trace !== undefined;
}

// The API (~0.7 MiB and 15-20 ms at start) is loaded only once something is registered: at
// once when it already is (OTEL_DENO=true), else when `tracing()` first sees a registration.
let api: Api | undefined = registered() ? await import("@opentelemetry/api") : undefined;
let loading: Promise<void> | undefined;

/** Attribute values of a span: strings, numbers, booleans (undefined ones are left out). */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/**
 * Where a piece of work came from, kept to link to it later: a watch event that queued a key,
 * the reconcile that asked for a requeue. Opaque outside this module.
 */
export type SpanLink = { readonly __spanLink: unique symbol };

/** What {@linkcode inSpan} hands to its function. */
export interface Span {
  /**
   * Sets attributes of the span (undefined values are skipped).
   *
   * @param attributes Names and values.
   */
  set(attributes: SpanAttributes): void;
  /**
   * The span as a link target, for work it causes later (a requeue).
   *
   * @returns Its link, or `undefined` when it is not recorded.
   */
  link(): SpanLink | undefined;
  /**
   * Marks the span failed with `err` (its status and an exception event), for work that
   * failed without throwing (a reconcile whose error the runner handled).
   *
   * @param err What went wrong.
   */
  error(err: unknown): void;
}

/** Options of {@linkcode inSpan}. */
export interface InSpanOptions {
  /**
   * Spans this one follows from (bounded by the caller). Do not repeat `parent` here: a link
   * to the parent reads as "follows from" rather than "child of" in backends that keep one
   * reference per span (Jaeger's model overrides the parent's reference with the link's).
   * @default none
   */
  links?: readonly SpanLink[];
  /**
   * The parent, instead of the active span: the work joins the trace of what caused it (a
   * reconcile in the trace of the watch event that queued it).
   * @default the active span
   */
  parent?: SpanLink;
  /**
   * Without `parent`, start a new trace whatever span is active.
   * @default false
   */
  root?: boolean;
  /**
   * The span kind: `server` for requests kubeno answers (admission, conversion).
   * @default "internal"
   */
  kind?: "internal" | "server" | "client";
}

const NOOP_SPAN: Span = { set() {}, link: () => undefined, error() {} };
// SpanKind's values (INTERNAL, SERVER, CLIENT), kept here so they need no API loaded.
const KINDS = { internal: 0, server: 1, client: 2 } as const;
// SpanStatusCode.ERROR.
const STATUS_ERROR = 2;

let delegate: TracerProvider | undefined;
let tracer: Tracer | undefined;
// What an unset global answers: a proxy over the shared no-op provider.
let noopDelegate: TracerProvider | undefined;

/**
 * Whether spans are recorded: a tracer provider is registered (Deno's, with `OTEL_DENO=true`,
 * or one the program set). Checked per call against the registered provider, so a provider set
 * after kubeno loaded is seen.
 *
 * @returns `true` when spans are recorded.
 *
 * @example Off unless a provider is registered
 * ```ts
 * import { tracing } from "./trace.ts";
 * if (typeof tracing() !== "boolean") throw new Error("Not a boolean");
 * ```
 */
export function tracing(): boolean {
  if (api === undefined) {
    // Nothing registered: off, without loading the API. A provider registered after kubeno
    // loaded is seen once the API has loaded (a microtask later: the program that registered
    // it has loaded it already).
    if (registered()) {
      loading ??= import("@opentelemetry/api").then((m) => void (api = m));
    }
    return false;
  }
  // Deno registers its provider as the global one; an SDK set through the API sits behind
  // the API's proxy, which stays the same object when its delegate changes.
  const p = api.trace.getTracerProvider();
  const d = p instanceof api.ProxyTracerProvider ? p.getDelegate() : p;
  if (d !== delegate) {
    delegate = d;
    noopDelegate ??= new api.ProxyTracerProvider().getDelegate();
    tracer = d === noopDelegate ? undefined : p.getTracer("kubeno");
  }
  return tracer !== undefined;
}

/**
 * Runs `fn` inside a new span named `name`: spans started and `fetch` calls made while it runs
 * (across awaits and timers) are its children, and log records written meanwhile carry its
 * trace and span ids. With tracing off, calls `fn` with a span that records nothing.
 *
 * @param name The span name (low cardinality: `reconcile`, `apply deployments`).
 * @param attributes Its attributes, or a function computing them (called only when tracing).
 * @param fn The work; its return value (or promise) is returned.
 * @param options Links, parent, kind.
 * @returns What `fn` returns.
 * @throws What `fn` throws (recorded on the span first).
 *
 * @example A span around some work
 * ```ts
 * import { inSpan } from "./trace.ts";
 * const n = await inSpan("count", { "kubeno.items": 2 }, async (span) => {
 *   span.set({ "kubeno.counted": true });
 *   return 2;
 * });
 * if (n !== 2) throw new Error("Lost the result");
 * ```
 */
export function inSpan<R>(
  name: string,
  attributes: SpanAttributes | (() => SpanAttributes),
  fn: (span: Span) => R,
  options: InSpanOptions = {},
): R {
  if (!tracing()) return fn(NOOP_SPAN);
  const { context, trace } = api!;
  const attrs = clean(typeof attributes === "function" ? attributes() : attributes);
  const links: Link[] = (options.links ?? []).map((l) => ({
    context: l as unknown as SpanContext,
  }));
  let parent = context.active();
  if (options.parent) {
    parent = trace.setSpanContext(parent, options.parent as unknown as SpanContext);
  } else if (options.root) parent = trace.deleteSpan(parent);
  const span = tracer!.startSpan(
    name,
    { attributes: attrs, links, kind: KINDS[options.kind ?? "internal"] },
    parent,
  );
  const handle = wrap(span);
  let result: R;
  try {
    result = context.with(trace.setSpan(parent, span), fn, undefined, handle);
  } catch (err) {
    failed(span, err);
    span.end();
    throw err;
  }
  if (result instanceof Promise) {
    return result.then(
      (v) => {
        span.end();
        return v;
      },
      (err) => {
        failed(span, err);
        span.end();
        throw err;
      },
    ) as R;
  }
  span.end();
  return result;
}

/**
 * The active span as a link, to store with work queued now and done later (a key in a work
 * queue). With tracing off, or no recorded span active, `undefined`.
 *
 * @returns The link, or `undefined`.
 *
 * @example Keeping what queued a key
 * ```ts
 * import { activeLink, inSpan } from "./trace.ts";
 * const link = inSpan("event", {}, () => activeLink());
 * // Later: inSpan("reconcile", {}, () => {}, { links: link ? [link] : [] });
 * ```
 */
export function activeLink(): SpanLink | undefined {
  if (!tracing()) return undefined;
  const span = api!.trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext() as unknown as SpanLink : undefined;
}

/**
 * The trace and span ids of the active span, for log records (`trace_id`, `span_id`, as
 * OpenTelemetry's log data model names them).
 *
 * @returns The ids, or `undefined` when tracing is off or no recorded span is active.
 *
 * @example Outside a span
 * ```ts
 * import { activeIds } from "./trace.ts";
 * if (activeIds() !== undefined) throw new Error("A span is active outside any span");
 * ```
 */
export function activeIds(): { trace_id: string; span_id: string } | undefined {
  if (!tracing()) return undefined;
  const span = api!.trace.getActiveSpan();
  if (!span?.isRecording()) return undefined;
  const c = span.spanContext();
  return { trace_id: c.traceId, span_id: c.spanId };
}

function wrap(span: OtelSpan): Span {
  return {
    set: (attributes) => void span.setAttributes(clean(attributes)),
    link: () => span.isRecording() ? span.spanContext() as unknown as SpanLink : undefined,
    error: (err) => failed(span, err),
  };
}

function clean(attributes: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes)) if (v !== undefined) out[k] = v;
  return out;
}

function failed(span: OtelSpan, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: STATUS_ERROR, message: e.message });
}
