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
 * Splits a JSON pointer into unescaped tokens.
 *
 * @param pointer A pointer such as `/metadata/labels/app.kubernetes.io~1name`.
 * @returns The tokens.
 * @throws {SyntaxError} When the pointer is neither empty nor starts with `/`.
 */
export function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) {
    throw new SyntaxError(`Cannot parse JSON pointer "${pointer}": it must start with "/"`);
  }
  return pointer.slice(1).split("/").map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"));
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

/**
 * Applies a JSON patch (add, remove, replace, move, copy, test) to a copy of `doc`.
 *
 * @param doc The document.
 * @param ops The operations.
 * @returns The patched copy.
 * @throws {Error} When an operation's path does not exist or a `test` fails.
 */
export function applyJsonPatch(doc: unknown, ops: readonly JsonPatchOperation[]): unknown {
  let root = toJson(doc);
  for (const op of ops) {
    switch (op.op) {
      case "add":
        root = put(root, parsePointer(op.path), toJson(op.value), "add");
        break;
      case "replace":
        root = put(root, parsePointer(op.path), toJson(op.value), "replace");
        break;
      case "remove":
        root = remove(root, parsePointer(op.path));
        break;
      case "copy":
        root = put(root, parsePointer(op.path), structuredClone(get(root, op.from)), "add");
        break;
      case "move": {
        const value = get(root, op.from);
        root = put(remove(root, parsePointer(op.from)), parsePointer(op.path), value, "add");
        break;
      }
      case "test":
        if (!equal(get(root, op.path), toJson(op.value))) {
          throw new Error(`JSON patch test failed at "${op.path}"`);
        }
        break;
    }
  }
  return root;
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

function get(root: Json, pointer: string): Json {
  let cur = root;
  for (const t of parsePointer(pointer)) {
    if (Array.isArray(cur) && /^(0|[1-9]\d*)$/.test(t) && Number(t) < cur.length) {
      cur = cur[Number(t)];
    } else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t];
    else throw new Error(`JSON patch path "${pointer}" does not exist`);
  }
  return cur;
}

function parentOf(root: Json, tokens: string[]): Json {
  return get(root, tokens.slice(0, -1).map((t) => `/${escapePointerToken(t)}`).join(""));
}

function put(root: Json, tokens: string[], value: Json, mode: "add" | "replace"): Json {
  if (tokens.length === 0) return value;
  const parent = parentOf(root, tokens);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) {
    const i = last === "-" && mode === "add" ? parent.length : Number(last);
    const max = mode === "add" ? parent.length : parent.length - 1;
    if (!/^(0|[1-9]\d*|-)$/.test(last) || i > max) {
      throw new Error(`JSON patch index "${last}" is out of bounds`);
    }
    if (mode === "add") parent.splice(i, 0, value);
    else parent[i] = value;
  } else if (isObject(parent)) {
    if (mode === "replace" && !Object.hasOwn(parent, last)) {
      throw new Error(`JSON patch path "/${tokens.join("/")}" does not exist`);
    }
    parent[last] = value;
  } else {
    throw new Error(`JSON patch parent of "/${tokens.join("/")}" is not a container`);
  }
  return root;
}

function remove(root: Json, tokens: string[]): Json {
  if (tokens.length === 0) return null;
  const parent = parentOf(root, tokens);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent) && /^(0|[1-9]\d*)$/.test(last) && Number(last) < parent.length) {
    parent.splice(Number(last), 1);
  } else if (isObject(parent) && Object.hasOwn(parent, last)) {
    delete parent[last];
  } else {
    throw new Error(`JSON patch path "/${tokens.join("/")}" does not exist`);
  }
  return root;
}
