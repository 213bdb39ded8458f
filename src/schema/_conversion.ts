/**
 * Private: the hub-and-spoke conversion behind `CustomResource.convert` (see
 * `conversion.ts` for the model and its guarantees).
 *
 * @module
 */
import type { KubeObject, ObjectMeta } from "../core/object.ts";
import { CONVERSION_DATA_ANNOTATION, ConversionError } from "./conversion.ts";

/** A spoke's two functions, erased to plain objects. */
export interface SpokeFunctions {
  toHub(object: KubeObject, restored: KubeObject | undefined): Record<string, unknown>;
  fromHub(hub: KubeObject): Record<string, unknown>;
}

/** What {@link makeConverter} converts between. */
export interface ConverterInit {
  group: string;
  kind: string;
  /** The hub's version name, e.g. `v1`. */
  hub: string;
  /** The spokes by version name. */
  spokes: ReadonlyMap<string, SpokeFunctions>;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** JSON with sorted keys and no `undefined`: equal text means equal content. */
function canonical(v: unknown): string {
  return JSON.stringify(
    v,
    (_k, val) =>
      isObj(val) ? Object.fromEntries(Object.keys(val).sort().map((k) => [k, val[k]])) : val,
  );
}

/** Everything but `apiVersion`, `kind` and `metadata`, plus labels and annotations. */
function content(o: Obj): string {
  const { apiVersion: _a, kind: _k, metadata, ...rest } = o;
  const meta = (isObj(metadata) ? metadata : {}) as ObjectMeta;
  const annotations = { ...meta.annotations };
  delete annotations[CONVERSION_DATA_ANNOTATION];
  return canonical({ rest, labels: meta.labels ?? {}, annotations });
}

/** A copy of `meta` without the conversion annotation (and without an emptied map). */
function withoutData(meta: ObjectMeta): ObjectMeta {
  const out = structuredClone(meta);
  if (out.annotations && CONVERSION_DATA_ANNOTATION in out.annotations) {
    delete out.annotations[CONVERSION_DATA_ANNOTATION];
    if (!Object.keys(out.annotations).length) delete out.annotations;
  }
  return out;
}

/**
 * Builds the object at `apiVersion` from a conversion function's result: `apiVersion` and
 * `kind` are kubeno's, the metadata is `base` with the result's labels and annotations.
 */
function assemble(
  result: unknown,
  base: ObjectMeta,
  apiVersion: string,
  kind: string,
  fail: (why: string) => never,
): KubeObject {
  if (!isObj(result)) {
    fail(
      `the conversion function returned ${JSON.stringify(result) ?? "undefined"}, not an object`,
    );
  }
  const { apiVersion: _a, kind: _k, metadata, ...rest } = result;
  const meta = structuredClone(base);
  if (isObj(metadata)) {
    const m = metadata as ObjectMeta;
    if (m.labels === undefined) delete meta.labels;
    else meta.labels = structuredClone(m.labels);
    if (m.annotations === undefined) delete meta.annotations;
    else meta.annotations = structuredClone(m.annotations);
  }
  return { apiVersion, kind, metadata: meta, ...structuredClone(rest) };
}

/**
 * Makes the function that converts an object of any version of the resource to any other.
 *
 * @param init Group, kind, hub version and spokes.
 * @returns `(object, apiVersion) => object`, throwing {@link ConversionError}.
 */
export function makeConverter(init: ConverterInit): (object: KubeObject, to: string) => KubeObject {
  const { group, kind, hub, spokes } = init;
  const hubApi = `${group}/${hub}`;
  const known = [hub, ...spokes.keys()];

  return (object: KubeObject, to: string): KubeObject => {
    if (!isObj(object) || !isObj(object.metadata)) {
      throw new ConversionError(`Cannot convert a ${kind}: the object has no metadata`);
    }
    const m = object.metadata;
    const ref = typeof m.name === "string" && m.name
      ? [m.namespace, m.name].filter((s) => typeof s === "string" && s).join("/")
      : undefined;
    const what = ref ? `${kind} "${ref}"` : `a ${kind}`;
    const versionOf = (apiVersion: unknown, role: string): string => {
      const text = String(apiVersion);
      const [g, v] = text.includes("/") ? text.split("/", 2) : [group, text];
      if (typeof apiVersion !== "string" || g !== group || !known.includes(v)) {
        throw new ConversionError(
          `Cannot convert ${what}: ${role} apiVersion "${text}" is not one of ${
            known.map((k) => `${group}/${k}`).join(", ")
          }`,
          ref,
        );
      }
      return v;
    };
    const source = versionOf(object.apiVersion, "its");
    const target = versionOf(to, "the desired");
    if (object.kind !== kind) {
      throw new ConversionError(
        `Cannot convert ${what}: its kind "${object.kind}" is not "${kind}"`,
        ref,
      );
    }
    if (source === target) return structuredClone(object);
    const call = <T>(fn: () => T, from: string, into: string): T => {
      try {
        return fn();
      } catch (err) {
        throw new ConversionError(
          `Cannot convert ${what} from ${group}/${from} to ${group}/${into}: ${
            err instanceof Error ? err.message : String(err)
          }`,
          ref,
          { cause: err },
        );
      }
    };
    const failing = (from: string, into: string) => (why: string): never => {
      throw new ConversionError(
        `Cannot convert ${what} from ${group}/${from} to ${group}/${into}: ${why}`,
        ref,
      );
    };

    // Source → hub.
    let hubObject: KubeObject;
    if (source === hub) {
      hubObject = { ...structuredClone(object), metadata: withoutData(m) };
    } else {
      const input = { ...structuredClone(object), metadata: withoutData(m) };
      const restored = readData(m, input.metadata, hubApi, kind);
      const out = call(() => spokes.get(source)!.toHub(input, restored), source, hub);
      hubObject = assemble(out, input.metadata, hubApi, kind, failing(source, hub));
      hubObject.metadata = withoutData(hubObject.metadata);
    }
    if (target === hub) return hubObject;

    // Hub → target, keeping what the target cannot hold.
    const spoke = spokes.get(target)!;
    const out = call(() => spoke.fromHub(structuredClone(hubObject)), hub, target);
    const result = assemble(
      out,
      hubObject.metadata,
      `${group}/${target}`,
      kind,
      failing(hub, target),
    );
    result.metadata = withoutData(result.metadata);
    let back: string | undefined;
    try {
      const again = spoke.toHub(structuredClone(result), undefined);
      back = content(assemble(again, result.metadata, hubApi, kind, (why) => {
        throw new ConversionError(why);
      }) as unknown as Obj);
    } catch {
      back = undefined; // cannot tell: keep the data
    }
    if (back !== content(hubObject as unknown as Obj)) {
      const { apiVersion: _a, kind: _k, metadata: _m, ...data } = hubObject as unknown as Obj;
      result.metadata.annotations = {
        ...result.metadata.annotations,
        [CONVERSION_DATA_ANNOTATION]: JSON.stringify({ apiVersion: hubApi, ...data }),
      };
    }
    return result;
  };
}

/** The hub content a spoke object carries in its annotation, as a hub object; else undefined. */
function readData(
  meta: ObjectMeta,
  stripped: ObjectMeta,
  hubApi: string,
  kind: string,
): KubeObject | undefined {
  const text = meta.annotations?.[CONVERSION_DATA_ANNOTATION];
  if (typeof text !== "string") return undefined;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObj(data) || data.apiVersion !== hubApi) return undefined;
  const { apiVersion: _a, kind: _k, metadata: _m, ...rest } = data;
  return { apiVersion: hubApi, kind, metadata: structuredClone(stripped), ...rest };
}
