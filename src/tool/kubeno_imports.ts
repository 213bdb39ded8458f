/**
 * Where a scaffolded project gets kubeno from: the import map entries of its `deno.json`.
 * User code always imports `@kubeno/kubeno` (and `@kubeno/kubeno/testing`); only this map
 * says whether that is the JSR package or a checkout of kubeno.
 *
 * @module
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import denoJson from "../../deno.json" with { type: "json" };
import { UsageError } from "./common.ts";
import { firstLine } from "../util/cli_io.ts";

/** The JSR specifier a new project depends on by default, e.g. `jsr:@kubeno/kubeno@^0.1.0`. */
export const DEFAULT_KUBENO = `jsr:${denoJson.name}@^${denoJson.version}`;

const HINT =
  "--kubeno takes a jsr: specifier, or the path or file:/https: URL of a kubeno checkout";

/**
 * Builds the import map entries for kubeno from `--kubeno`:
 *
 * - a `jsr:` specifier maps `@kubeno/kubeno`, `/testing` and `/cli` to it;
 * - a path or `file:`/`http(s):` URL of a checkout maps them to its `mod.ts`, `testing.ts`
 *   and `cli.ts`, plus the checkout's own `imports` (its npm dependencies), since kubeno's
 *   modules then resolve their bare imports through the project's map.
 *
 * @param spec The `--kubeno` value.
 * @param cwd Directory a relative path is resolved against.
 * @returns The entries, in a stable order.
 * @throws {UsageError} When the spec is neither a `jsr:` specifier nor a readable checkout.
 *
 * @example The default, from JSR
 * ```ts
 * import { DEFAULT_KUBENO, kubenoImports } from "./kubeno_imports.ts";
 * const map = await kubenoImports(DEFAULT_KUBENO, "/");
 * if (map["@kubeno/kubeno/testing"] !== `${DEFAULT_KUBENO}/testing`) throw new Error();
 * ```
 *
 * @example A local checkout
 * ```ts
 * import { kubenoImports } from "./kubeno_imports.ts";
 * const map = await kubenoImports(new URL("../../", import.meta.url).href, "/");
 * if (!map["@kubeno/kubeno"].endsWith("/mod.ts") || !map["zod"]) throw new Error();
 * ```
 */
export async function kubenoImports(spec: string, cwd: string): Promise<Record<string, string>> {
  if (spec.startsWith("jsr:")) {
    if (!/^jsr:@kubeno\/kubeno(@[^/]+)?$/.test(spec)) {
      throw new UsageError(`Invalid --kubeno "${spec}": expected jsr:@kubeno/kubeno@<version>`);
    }
    return Object.fromEntries(
      Object.keys(denoJson.exports).map((
        k,
      ) => [`@kubeno/kubeno${k.slice(1)}`, `${spec}${k.slice(1)}`]),
    );
  }
  const base = checkoutUrl(spec, cwd);
  const config = await readConfig(new URL("deno.json", base), spec);
  if (config.name !== denoJson.name) {
    throw new UsageError(
      `Invalid --kubeno "${spec}": its deno.json names "${config.name}", not ` +
        `"${denoJson.name}"; ${HINT}`,
    );
  }
  const own: Record<string, string> = {};
  for (const [key, value] of Object.entries(config.imports ?? {})) {
    own[key] = /^\.\.?\//.test(value) ? new URL(value, base).href : value;
  }
  // Every entry point of the checkout, as its deno.json exports them.
  const entries = Object.entries(config.exports ?? { ".": "./mod.ts" }).map((
    [k, v],
  ) => [`@kubeno/kubeno${k.slice(1)}`, new URL(v, base).href]);
  return { ...Object.fromEntries(entries), ...own };
}

function checkoutUrl(spec: string, cwd: string): URL {
  let url: URL;
  if (/^(file|https?):/.test(spec)) {
    try {
      url = new URL(spec);
    } catch {
      throw new UsageError(`Invalid --kubeno "${spec}": not a URL; ${HINT}`);
    }
  } else if (/^[a-z][a-z0-9+.-]*:/i.test(spec) && !/^[a-z]:[\\/]/i.test(spec)) {
    throw new UsageError(`Invalid --kubeno "${spec}"; ${HINT}`);
  } else {
    url = pathToFileURL(resolve(cwd, spec));
  }
  if (!url.pathname.endsWith("/")) url.pathname += "/";
  return url;
}

interface Config {
  name?: string;
  imports?: Record<string, string>;
  exports?: Record<string, string>;
}

async function readConfig(url: URL, spec: string): Promise<Config> {
  let text: string;
  let status: number | undefined;
  try {
    if (url.protocol === "file:") text = await Deno.readTextFile(url);
    else {
      const res = await fetch(url);
      text = await res.text();
      if (!res.ok) status = res.status;
    }
  } catch (err) {
    throw new UsageError(
      `Invalid --kubeno "${spec}": cannot read ${url.href} (${firstLine(err)}); ${HINT}`,
    );
  }
  if (status !== undefined) {
    throw new UsageError(
      `Invalid --kubeno "${spec}": cannot read ${url.href} (HTTP ${status}); ${HINT}`,
    );
  }
  try {
    return JSON.parse(text) as Config;
  } catch (err) {
    throw new UsageError(`Invalid --kubeno "${spec}": ${url.href} is not JSON (${firstLine(err)})`);
  }
}
