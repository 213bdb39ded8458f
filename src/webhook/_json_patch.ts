// RFC 6902 JSON patches computed from two JSON documents, for mutating admission: the
// webhook hands a handler a copy of the object, the handler changes it, and the API server
// gets the difference. Values are compared as JSON (after a JSON round trip), so `undefined`
// fields count as absent and class instances (Date) count as what they serialize to.
import type { JsonPatchOperation } from "../client/types.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Escapes one reference token of a JSON pointer (RFC 6901): `~` → `~0`, `/` → `~1`.
 *
 * @param token An object key or array index.
 * @returns The escaped token.
 */
export function escapePointerToken(token: string): string {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * The JSON patch that turns `before` into `after`. Objects are diffed key by key; arrays
 * element by element over their common length, then trailing elements are removed (last
 * first) or appended.
 *
 * @param before The original document.
 * @param after The changed document.
 * @returns The operations, empty when the documents are equal as JSON.
 */
export function diffJson(before: unknown, after: unknown): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  walk(toJson(before), toJson(after), "", ops);
  return ops;
}

function toJson(value: unknown): Json {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value)) as Json;
}

function isObject(v: Json): v is { [key: string]: Json } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function equal(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => equal(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length &&
      ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
  }
  return false;
}

function walk(a: Json, b: Json, path: string, ops: JsonPatchOperation[]): void {
  if (equal(a, b)) return;
  if (isObject(a) && isObject(b)) {
    for (const k of Object.keys(a)) {
      const p = `${path}/${escapePointerToken(k)}`;
      if (!Object.hasOwn(b, k)) ops.push({ op: "remove", path: p });
      else walk(a[k], b[k], p, ops);
    }
    for (const k of Object.keys(b)) {
      if (!Object.hasOwn(a, k)) {
        ops.push({ op: "add", path: `${path}/${escapePointerToken(k)}`, value: b[k] });
      }
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    const common = Math.min(a.length, b.length);
    for (let i = 0; i < common; i++) walk(a[i], b[i], `${path}/${i}`, ops);
    for (let i = a.length - 1; i >= common; i--) ops.push({ op: "remove", path: `${path}/${i}` });
    for (let i = common; i < b.length; i++) {
      ops.push({ op: "add", path: `${path}/${i}`, value: b[i] });
    }
    return;
  }
  ops.push({ op: "replace", path, value: b });
}
