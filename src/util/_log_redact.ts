// Redaction of secrets from values about to be logged. Kept apart from log.ts so that the
// rules can be read, and tested, without the logging library.

/** What replaces a redacted value. */
export const REDACTED = "[REDACTED]";

// Key names (lower-cased, without `-`, `_` and `.`) whose values are always secret.
const SECRET_KEYS = new Set([
  "authorization",
  "proxyauthorization",
  "bearer",
  "cookie",
  "setcookie",
  "password",
  "passwd",
  "clientkey",
  "clientkeydata",
  "tlskey",
  "privatekey",
  "apikey",
  "token",
  "credentials",
  "secretkey",
  "secretaccesskey",
]);
// Key names containing one of these are secret too, e.g. `bearerToken`, `adminPassword`.
const SECRET_PARTS = ["token", "password", "passwd", "privatekey", "apikey"];

const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;
const PEM_KEY = /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?(-----END \1PRIVATE KEY-----|$)/g;

/**
 * Whether a value stored under `key` must not be logged.
 *
 * @param key A property or field name.
 * @returns True for names such as `token`, `password`, `authorization`, `client-key-data`
 * and `tls.key`.
 */
export function isSecretKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[-_.]/g, "");
  return SECRET_KEYS.has(k) || SECRET_PARTS.some((p) => k.includes(p));
}

/**
 * Returns a copy of `value` with secrets replaced by `"[REDACTED]"`: values under secret key
 * names (see {@linkcode isSecretKey}), the `data` and `stringData` of Secret objects,
 * `Bearer`/`Basic` credentials and PEM private keys inside strings. Other values are kept;
 * the input is never changed. Nesting deeper than 10 levels and cycles are cut off.
 *
 * @param value Anything about to be logged.
 * @returns The redacted copy.
 *
 * @example Redacting by key name and Secret data
 * ```ts
 * import { redact } from "./log.ts";
 *
 * const out = redact({
 *   user: "admin",
 *   "client-key-data": "LS0t...",
 *   secret: { kind: "Secret", metadata: { name: "db" }, data: { password: "aHVudGVyMg==" } },
 *   header: "Authorization: Bearer abc.def",
 * }) as Record<string, any>;
 * if (out.user !== "admin" || out["client-key-data"] !== "[REDACTED]") throw new Error();
 * if (out.secret.data !== "[REDACTED]" || out.secret.metadata.name !== "db") throw new Error();
 * if (out.header !== "Authorization: Bearer [REDACTED]") throw new Error(out.header);
 * ```
 */
export function redact(value: unknown): unknown {
  return walk(value, 0, new WeakSet());
}

function walk(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === "string") return redactString(value);
  if (value === null || typeof value !== "object") return value;
  if (depth > 10) return "[...]";
  if (seen.has(value)) return "[Circular]";
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => walk(v, depth + 1, seen));
    if (value instanceof Error) {
      const err = new Error(redactString(value.message), {
        cause: value.cause === undefined ? undefined : walk(value.cause, depth + 1, seen),
      });
      err.name = value.name;
      err.stack = value.stack && redactString(value.stack);
      return err;
    }
    if (value instanceof Date || ArrayBuffer.isView(value)) return value;
    if (value instanceof Map) {
      return new Map([...value].map(([k, v]) => [k, secretOr(String(k), v, depth, seen)]));
    }
    if (value instanceof Headers) {
      return Object.fromEntries(
        [...value].map(([k, v]) => [k, isSecretKey(k) ? REDACTED : redactString(v)]),
      );
    }
    const isSecret = (value as { kind?: unknown }).kind === "Secret";
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = isSecret && (k === "data" || k === "stringData")
        ? REDACTED
        : secretOr(k, v, depth, seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

function secretOr(key: string, v: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (isSecretKey(key) && v !== undefined && v !== null && v !== "") return REDACTED;
  return walk(v, depth + 1, seen);
}

function redactString(s: string): string {
  if (s.length < 7) return s;
  return s.replace(BEARER, `$1 ${REDACTED}`).replace(PEM_KEY, REDACTED);
}
