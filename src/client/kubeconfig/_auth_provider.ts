// Auth-provider plugins (oidc and the like): the one thing kubeno leaves to
// `@kubernetes/client-node`. It is imported here, lazily, only when a kubeconfig user names an
// auth provider: everything else (certificates, tokens, token files, exec plugins) is native,
// and an operator that uses none of these never loads client-node or its dependencies.
//
// The specifier is built at run time on purpose. A literal `import("npm:…")` would be
// followed by `deno bundle` and `deno compile`, putting client-node (~15 MB of JavaScript)
// into every bundle and binary again; `deno publish` reports this import as unanalyzable for
// the same reason. It is a full `npm:` specifier, so it resolves without an import map, also
// from the published package. A compiled operator that needs an auth provider adds
// `--include npm:@kubernetes/client-node@~1.4.0` to `deno compile`.

/** The npm package (kept in step with deno.json's `@kubernetes/client-node`). */
export const CLIENT_NODE = ["npm:@kubernetes", "client-node@~1.4.0"].join("/");

/** What one request needs (the shape of `Credentials` in _credentials.ts). */
interface ProviderCredentials {
  headers: Record<string, string>;
  cert?: string;
  key?: string;
}

/** The part of client-node's `KubeConfig` used here. */
interface KubeConfigLike {
  loadFromString(config: string, opts?: { onInvalidEntry?: string }): void;
  setCurrentContext(name: string): void;
  applyToHTTPSOptions(opts: Record<string, unknown>): Promise<void>;
}

let loaded: Promise<{ KubeConfig: new () => KubeConfigLike }> | undefined;

/**
 * Imports client-node once, dropping Node's `punycode` deprecation warning (DEP0040) while it
 * loads: it is printed under Deno when a dependency requires the `punycode` built-in (client-node
 * 1.x does, through node-fetch → whatwg-url → tr46) and says nothing actionable to kubeno's
 * users. Only that warning and only during the import is suppressed.
 */
function importClientNode(): Promise<{ KubeConfig: new () => KubeConfigLike }> {
  loaded ??= (async () => {
    const { default: process } = await import("node:process");
    const original = process.emitWarning;
    process.emitWarning = function (this: unknown, warning: unknown, ...rest: unknown[]) {
      const text = String(warning);
      const code = rest.find((r) => typeof r === "string" && r.startsWith("DEP")) ??
        (rest[0] as { code?: string } | undefined)?.code;
      if (code === "DEP0040" || text.includes("`punycode` module is deprecated")) return;
      return (original as (...a: unknown[]) => void).call(process, warning, ...rest);
    } as typeof process.emitWarning;
    try {
      return await import(CLIENT_NODE);
    } finally {
      process.emitWarning = original;
    }
  })();
  return loaded;
}

/**
 * Credentials from client-node's authenticator for the context's auth provider; client-node
 * refreshes expired tokens itself.
 *
 * @param raw The merged kubeconfig document.
 * @param context The selected context.
 * @returns A function giving the headers (and client certificate, if any) for one request.
 */
export async function authProviderCredentials(
  raw: Record<string, unknown>,
  context: string,
): Promise<() => Promise<ProviderCredentials>> {
  const { KubeConfig } = await importClientNode();
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(raw), { onInvalidEntry: "throw" });
  kc.setCurrentContext(context);
  return async () => {
    const opts: { headers?: Record<string, unknown>; cert?: unknown; key?: unknown } = {};
    await kc.applyToHTTPSOptions(opts);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(opts.headers ?? {})) {
      if (v !== undefined && v !== null) headers[k] = String(v);
    }
    return { headers, cert: pem(opts.cert), key: pem(opts.key) };
  };
}

function pem(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (value instanceof Uint8Array) return new TextDecoder().decode(value);
  return String(value);
}
