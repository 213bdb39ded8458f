/**
 * Structured logging for kubeno and operators built with it. This is the one module that
 * knows the logging library (LogTape); everything else calls {@linkcode getLogger} from here,
 * so replacing the library is a change to this file alone.
 *
 * Controllers pass `controller`, `namespace`, `name` and `reconcileID` as properties; they
 * appear as fields of each JSON line. Records written inside a span (with tracing on, see
 * `util/trace.ts`) also carry its `trace_id` and `span_id`.
 *
 * @module
 */

import type { LogRecord } from "@logtape/logtape";
import type * as LogTape from "@logtape/logtape";
import { redact } from "./_log_redact.ts";
import { activeIds } from "./trace.ts";

/**
 * A logger: LogTape's `Logger` (https://jsr.io/@logtape/logtape/doc/~/Logger), what
 * {@linkcode getLogger} returns and what reconcile functions get as `ctx.log`. Log with
 * `log.info("Reconciled {name}", { name })` (also `trace`, `debug`, `warn`, `error`, `fatal`);
 * `log.with({ ... })` returns a logger adding those properties to every record.
 */
// An alias rather than a re-export: re-exported, LogTape's whole Logger interface, with the
// library's undocumented helper types, would become part of kubeno's documentation.
export type Logger = LogTape.Logger;

/**
 * The logger of a category. Loggers are cheap; what they write, and where, is set once by
 * {@linkcode configureLogging} (nothing is written before that, and LogTape itself is loaded
 * only then — or by a program that configures LogTape itself, whose sinks then get the
 * records of kubeno's loggers too).
 *
 * @param category The category, e.g. `["myoperator", "controller"]`; a string is a
 * one-element category; omitted, the root logger.
 * @returns The logger.
 *
 * @example A controller's logger
 * ```ts
 * import { getLogger } from "./log.ts";
 * const log = getLogger(["myoperator", "controller"]);
 * log.info("Reconciled {name}", { name: "web" });
 * ```
 */
export function getLogger(category?: string | readonly string[]): Logger {
  const path = category === undefined ? [] : typeof category === "string" ? [category] : category;
  return new DeferredLogger(path, []) as unknown as Logger;
}

// LogTape's root logger, which every copy of LogTape in the process shares through the global
// object (LogTape's own mechanism): it exists once LogTape has been loaded and used, by
// `configureLogging` or by a program that configures LogTape itself.
const ROOT_LOGGER = Symbol.for("logtape.rootLogger");

function rootLogger(): Logger | undefined {
  return (globalThis as Record<symbol, Logger | undefined>)[ROOT_LOGGER] ?? undefined;
}

/**
 * A logger that loads nothing: LogTape (and the Node.js `util` it brings, ~6 MiB and 30 ms at
 * start, measured) is loaded by `configureLogging`. Until LogTape's root logger
 * exists nothing could be written (no sinks), so records are dropped, as LogTape would drop
 * them; from then on every call goes to LogTape's logger of the same category and properties.
 */
class DeferredLogger {
  readonly category: readonly string[];
  readonly #props: readonly Record<string, unknown>[];
  #logger: Logger | undefined;

  constructor(category: readonly string[], props: readonly Record<string, unknown>[]) {
    this.category = category;
    this.#props = props;
  }

  #real(): Logger | undefined {
    if (this.#logger) return this.#logger;
    const root = rootLogger();
    if (!root) return undefined;
    let logger = this.category.length === 0
      ? root
      : root.getChild(this.category as readonly [string, ...string[]]);
    for (const p of this.#props) logger = logger.with(p);
    return this.#logger = logger;
  }

  get parent(): Logger | null {
    if (this.category.length === 0) return null;
    return getLogger(this.category.slice(0, -1));
  }

  getChild(subcategory: string | readonly string[]): Logger {
    const sub = typeof subcategory === "string" ? [subcategory] : subcategory;
    const real = this.#real();
    if (real) return real.getChild(sub as readonly [string, ...string[]]);
    return new DeferredLogger([...this.category, ...sub], this.#props) as unknown as Logger;
  }

  with(properties: Record<string, unknown>): Logger {
    const real = this.#real();
    if (real) return real.with(properties);
    return new DeferredLogger(this.category, [...this.#props, properties]) as unknown as Logger;
  }

  trace(...args: unknown[]): unknown {
    return (this.#real()?.trace as ((...a: unknown[]) => unknown) | undefined)?.(...args);
  }
  debug(...args: unknown[]): unknown {
    return (this.#real()?.debug as ((...a: unknown[]) => unknown) | undefined)?.(...args);
  }
  info(...args: unknown[]): unknown {
    return (this.#real()?.info as ((...a: unknown[]) => unknown) | undefined)?.(...args);
  }
  warn(...args: unknown[]): unknown {
    return (this.#real()?.warn as ((...a: unknown[]) => unknown) | undefined)?.(...args);
  }
  warning(...args: unknown[]): unknown {
    return (this.#real()?.warning as ((...a: unknown[]) => unknown) | undefined)?.(...args);
  }
  error(...args: unknown[]): unknown {
    return (this.#real()?.error as ((...a: unknown[]) => unknown) | undefined)?.(...args);
  }
  fatal(...args: unknown[]): unknown {
    return (this.#real()?.fatal as ((...a: unknown[]) => unknown) | undefined)?.(...args);
  }
  emit(record: Omit<LogRecord, "category">): void {
    this.#real()?.emit(record);
  }
  isEnabledFor(level: LogRecord["level"]): boolean {
    return this.#real()?.isEnabledFor(level) ?? false;
  }
}
export { redact };

/** Log levels, from most to least verbose. */
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal";

/** How log lines look. */
export type LogFormat = "json" | "pretty" | "auto";

/** Options of {@linkcode configureLogging}. */
export interface LoggingOptions {
  /**
   * The least severe level written; `warning` is accepted for `warn`.
   * @default {"info"}
   */
  level?: LogLevel | "warning";
  /**
   * `json`: one JSON object per line; `pretty`: readable text; `auto`: `pretty` when the
   * output is a terminal outside a cluster (no `KUBERNETES_SERVICE_HOST`), else `json`.
   * @default {"auto"}
   */
  format?: LogFormat;
  /**
   * Where formatted lines go (each ends with a newline). Writing is synchronous so that
   * nothing is lost when the process exits right after logging.
   * @default {writes to stderr}
   */
  write?: (line: string) => void;
}

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;
type LogTapeLevel = LogRecord["level"];

/**
 * Sends every logger's records, redacted (see {@linkcode redact}), to stderr as JSON lines
 * or readable text. Replaces any earlier configuration.
 *
 * JSON lines hold `ts` (RFC 3339), `level`, `logger` (the category joined with `.`), `msg`
 * (the rendered message) and every property as a top-level field (a property whose name
 * collides with those gets an `_` prefix). Errors become `{ name, message, stack }`.
 *
 * @param options Level, format and destination.
 * @returns A promise that resolves once logging is configured.
 * @throws {RangeError} When `level` or `format` is not one of the allowed values.
 *
 * @example JSON lines with properties, secrets redacted
 * ```ts
 * import { configureLogging, getLogger } from "./log.ts";
 *
 * const lines: string[] = [];
 * await configureLogging({ level: "debug", format: "json", write: (l) => lines.push(l) });
 * getLogger(["kubeno", "controller"]).info("Reconciled {name}", {
 *   controller: "myapp",
 *   namespace: "default",
 *   name: "web",
 *   reconcileID: "4f1c",
 *   token: "s3cr3t",
 * });
 * const line = JSON.parse(lines[0]);
 * if (line.msg !== "Reconciled web" || line.controller !== "myapp") throw new Error(lines[0]);
 * if (line.token !== "[REDACTED]") throw new Error("Token was logged");
 * ```
 */
export async function configureLogging(options: LoggingOptions = {}): Promise<void> {
  const level = options.level === "warning" ? "warn" : options.level ?? "info";
  if (!LEVELS.includes(level)) {
    throw new RangeError(
      `Cannot configure logging: unknown level "${level}" (use ${LEVELS.join(", ")})`,
    );
  }
  const format = options.format ?? "auto";
  if (!["json", "pretty", "auto"].includes(format)) {
    throw new RangeError(
      `Cannot configure logging: unknown format "${format}" (use json, pretty or auto)`,
    );
  }
  const write = options.write ?? writeStderr;
  const pretty = format === "pretty" ||
    (format === "auto" && isStderrTerminal() && !inCluster());
  const color = pretty && !options.write && isStderrTerminal() && !Deno.noColor;
  const render = pretty ? (r: LogRecord) => formatPretty(r, color) : formatJson;
  const sink = (record: LogRecord) => write(render(redactRecord(withTraceIds(record))));
  const { configure, getLogger: logTapeLogger } = await import("@logtape/logtape");
  // Creates LogTape's root logger, through which the deferred loggers write from now on.
  logTapeLogger();
  await configure({
    reset: true,
    sinks: { kubeno: sink },
    loggers: [
      { category: [], lowestLevel: toLogTape(level), sinks: ["kubeno"] },
      {
        category: ["logtape", "meta"],
        lowestLevel: "warning",
        sinks: ["kubeno"],
        parentSinks: "override",
      },
    ],
  });
}

/**
 * Undoes {@linkcode configureLogging}: every logger is silent again. For tests and for
 * libraries that must leave logging as they found it.
 *
 * @returns A promise that resolves once logging is reset.
 *
 * @example Silencing logs
 * ```ts
 * import { configureLogging, getLogger, resetLogging } from "./log.ts";
 *
 * const lines: string[] = [];
 * await configureLogging({ format: "json", write: (l) => lines.push(l) });
 * await resetLogging();
 * getLogger(["kubeno"]).info("Not written");
 * if (lines.length !== 0) throw new Error("Logged after reset");
 * ```
 */
export async function resetLogging(): Promise<void> {
  const { reset } = await import("@logtape/logtape");
  await reset();
}

/**
 * Formats one record as a JSON line (with the trailing newline).
 *
 * @param record A LogTape record.
 * @returns The line.
 */
function formatJson(record: LogRecord): string {
  const out: Record<string, unknown> = {
    ts: new Date(record.timestamp).toISOString(),
    level: fromLogTape(record.level),
    logger: record.category.join("."),
    msg: renderMessage(record),
  };
  for (const [k, v] of Object.entries(record.properties)) {
    let key = k;
    while (key in out) key = `_${key}`;
    out[key] = v;
  }
  return JSON.stringify(out, jsonReplacer) + "\n";
}

const COLORS: Record<string, string> = {
  trace: "\x1b[90m",
  debug: "\x1b[36m",
  info: "\x1b[32m",
  warn: "\x1b[33m",
  error: "\x1b[31m",
  fatal: "\x1b[35m",
};

function formatPretty(record: LogRecord, color: boolean): string {
  const level = fromLogTape(record.level);
  const time = new Date(record.timestamp).toISOString();
  const tag = level.toUpperCase().padEnd(5);
  // Fields the message already shows, and empty ones (`late=`), would only be noise to a person.
  const shown = typeof record.rawMessage === "string"
    ? new Set([...record.rawMessage.matchAll(/\{(\w+)\}/g)].map((m) => m[1]))
    : new Set<string>();
  const fields = Object.entries(record.properties)
    .filter(([k, v]) => !shown.has(k) && v !== "" && v !== undefined && v !== null)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v, jsonReplacer)}`)
    .join(" ");
  const head = color
    ? `\x1b[2m${time}\x1b[0m ${COLORS[level]}${tag}\x1b[0m \x1b[1m${
      record.category.join(".")
    }\x1b[0m`
    : `${time} ${tag} ${record.category.join(".")}`;
  return `${head} ${renderMessage(record)}${
    fields ? (color ? `  \x1b[2m${fields}\x1b[0m` : `  ${fields}`) : ""
  }\n`;
}

function renderMessage(record: LogRecord): string {
  let msg = "";
  record.message.forEach((part, i) => {
    if (i % 2 === 0 || typeof part === "string") msg += String(part);
    else msg += JSON.stringify(part, jsonReplacer) ?? String(part);
  });
  return msg;
}

/**
 * Adds `trace_id` and `span_id` of the span the record was written in (a reconcile, an
 * admission request), so logs and traces of the same work find each other. Sinks run
 * synchronously inside the logging call, so the active span is the caller's.
 */
function withTraceIds(record: LogRecord): LogRecord {
  const ids = activeIds();
  return ids ? { ...record, properties: { ...record.properties, ...ids } } : record;
}

function redactRecord(record: LogRecord): LogRecord {
  return {
    ...record,
    message: record.message.map((v, i) => (i % 2 === 1 ? redact(v) : v)),
    properties: redact(record.properties) as Record<string, unknown>,
  };
}

function jsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    const out: Record<string, unknown> = { name: value.name, message: value.message };
    if (value.stack) out.stack = value.stack;
    if (value.cause !== undefined) out.cause = value.cause;
    return out;
  }
  if (typeof value === "bigint") return value.toString();
  return value;
}

function toLogTape(level: LogLevel): LogTapeLevel {
  return level === "warn" ? "warning" : level;
}

function fromLogTape(level: LogTapeLevel): LogLevel {
  return level === "warning" ? "warn" : level;
}

const encoder = new TextEncoder();

function writeStderr(line: string): void {
  let bytes = encoder.encode(line);
  while (bytes.length > 0) bytes = bytes.subarray(Deno.stderr.writeSync(bytes));
}

/** In a pod: the kubelet sets KUBERNETES_SERVICE_HOST (unreadable counts as not in one). */
function inCluster(): boolean {
  try {
    return Boolean(Deno.env.get("KUBERNETES_SERVICE_HOST"));
  } catch {
    return false;
  }
}

function isStderrTerminal(): boolean {
  try {
    return Deno.stderr.isTerminal();
  } catch {
    return false;
  }
}
