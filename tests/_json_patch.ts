// RFC 6902 JSON patches applied to a document, for tests: what the API server does with the
// patch a mutating webhook answers (src/webhook/_json_patch.ts computes it). Only tests use it,
// so it does not ship.
import { isDeepStrictEqual } from "node:util";
import type { JsonPatchOperation } from "../src/client/types.ts";
import { escapePointerToken } from "../src/webhook/_json_patch.ts";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A failed patch operation: a missing path, an index out of bounds, a failed `test`. */
export class JsonPatchError extends Error {
  override name = "JsonPatchError";
}

function toJson(value: unknown): Json {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value)) as Json;
}

function isObject(v: Json): v is { [key: string]: Json } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const equal = (a: Json, b: Json) => isDeepStrictEqual(a, b);

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
 * Applies a JSON patch (add, remove, replace, move, copy, test) to a copy of `doc`.
 *
 * @param doc The document.
 * @param ops The operations.
 * @returns The patched copy.
 * @throws {JsonPatchError} When an operation's path does not exist or a `test` fails.
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
          throw new JsonPatchError(`JSON patch test failed at "${op.path}"`);
        }
        break;
    }
  }
  return root;
}

function get(root: Json, pointer: string): Json {
  let cur = root;
  for (const t of parsePointer(pointer)) {
    if (Array.isArray(cur) && /^(0|[1-9]\d*)$/.test(t) && Number(t) < cur.length) {
      cur = cur[Number(t)];
    } else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t];
    else throw new JsonPatchError(`JSON patch path "${pointer}" does not exist`);
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
      throw new JsonPatchError(`JSON patch index "${last}" is out of bounds`);
    }
    if (mode === "add") parent.splice(i, 0, value);
    else parent[i] = value;
  } else if (isObject(parent)) {
    if (mode === "replace" && !Object.hasOwn(parent, last)) {
      throw new JsonPatchError(`JSON patch path "/${tokens.join("/")}" does not exist`);
    }
    parent[last] = value;
  } else {
    throw new JsonPatchError(`JSON patch parent of "/${tokens.join("/")}" is not a container`);
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
    throw new JsonPatchError(`JSON patch path "/${tokens.join("/")}" does not exist`);
  }
  return root;
}
