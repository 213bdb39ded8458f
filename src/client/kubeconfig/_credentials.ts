// Where a request's credentials come from, with client-go's caching rules:
//
// - static: a token, basic auth, inline client certificate data — resolved once;
// - files (tokenFile, client-certificate, client-key, the in-cluster token): re-read when the
//   last read is older than a minute, and at once after a 401, so bound service-account tokens
//   that the kubelet rotates keep working; a failed re-read keeps the last good value;
// - an exec plugin: run once, its credential kept until its expirationTimestamp (for ever
//   without one), run again after a 401 answered to the credential it gave;
// - an auth provider (oidc…): client-node's authenticator, loaded only then.
//
// Each request asks for credentials; the common case returns the same object without a
// system call.
import type { Clock } from "../../util/clock.ts";
import { firstLine } from "../../util/cli_io.ts";
import { type ExecCredential, runExecPlugin } from "./_exec_plugin.ts";
import { authProviderCredentials } from "./_auth_provider.ts";
import type { KubeCluster, KubeUser } from "./_kubeconfig_file.ts";
import { CredentialsError } from "./kubeconfig_error.ts";

/** Credentials for one request. Tokens may change between calls; fetch them per request. */
export interface Credentials {
  /** Headers to send, e.g. `Authorization` and `Impersonate-User`. */
  headers: Record<string, string>;
  /**
   * Headers that may be sent more than once, in order: `Impersonate-Group` and
   * `Impersonate-Extra-<key>` carry one value per header, as client-go sends them.
   */
  repeatedHeaders?: readonly (readonly [string, string])[];
  /** PEM client certificate (chain), for mutual TLS. */
  cert?: string;
  /** PEM private key of `cert`. */
  key?: string;
}

/** How often token and certificate files are read again (client-go's cachingTokenSource). */
export const FILE_REFRESH_MS = 60_000;

/** One request's credentials, and what to do when the server rejected them. */
export interface CredentialSource {
  /** Credentials for the next request. */
  credentials(): Promise<Credentials>;
  /** After a 401 to `used`: refreshes what can be refreshed; true when the result differs. */
  invalidate(used: Credentials): Promise<boolean>;
  /** True when credentials can change over time (files, exec plugins, auth providers). */
  dynamic: boolean;
}

/** A file's content, re-read after {@link FILE_REFRESH_MS} or on demand. */
class FileValue {
  readonly #path: string;
  readonly #what: string;
  readonly #clock: Clock;
  readonly #trim: boolean;
  #value: string | undefined;
  #readAt = -Infinity;
  #reading: Promise<string> | undefined;

  constructor(path: string, what: string, clock: Clock, trim: boolean) {
    this.#path = path;
    this.#what = what;
    this.#clock = clock;
    this.#trim = trim;
  }

  /** The value, when it was read less than a minute ago: no I/O. */
  fresh(): string | undefined {
    return this.#clock.now() - this.#readAt < FILE_REFRESH_MS ? this.#value : undefined;
  }

  get(): Promise<string> {
    const v = this.fresh();
    if (v !== undefined) return Promise.resolve(v);
    this.#reading ??= this.#read().finally(() => this.#reading = undefined);
    return this.#reading;
  }

  /** Reads the file now; true when its content changed. */
  async reload(): Promise<boolean> {
    const before = this.#value;
    this.#readAt = -Infinity;
    return (await this.get()) !== before;
  }

  /** Reads the file at once, synchronously (at load time, for early errors). */
  readNow(): string {
    try {
      this.#value = this.#check(Deno.readTextFileSync(this.#path));
    } catch (e) {
      throw new CredentialsError(`cannot read ${this.#what} "${this.#path}": ${firstLine(e)}`, {
        cause: e,
      });
    }
    this.#readAt = this.#clock.now();
    return this.#value;
  }

  async #read(): Promise<string> {
    try {
      this.#value = this.#check(await Deno.readTextFile(this.#path));
    } catch (e) {
      // Like client-go: keep using the last good value when a rotation is half-written.
      if (this.#value === undefined) {
        throw new CredentialsError(`cannot read ${this.#what} "${this.#path}": ${firstLine(e)}`);
      }
    }
    this.#readAt = this.#clock.now();
    return this.#value!;
  }

  #check(text: string): string {
    const v = this.#trim ? text.trim() : text;
    if (!v) throw new CredentialsError("it is empty");
    return v;
  }
}

/** An exec plugin's credential, kept until it expires. */
class ExecValue {
  readonly #run: () => Promise<ExecCredential>;
  readonly #clock: Clock;
  #cached: ExecCredential | undefined;
  #running: Promise<ExecCredential> | undefined;

  constructor(run: () => Promise<ExecCredential>, clock: Clock) {
    this.#run = run;
    this.#clock = clock;
  }

  /** The cached credential while it has not expired: no process started. */
  fresh(): ExecCredential | undefined {
    const c = this.#cached;
    return c && (c.expiresAt === undefined || this.#clock.now() < c.expiresAt) ? c : undefined;
  }

  get(): Promise<ExecCredential> {
    const c = this.fresh();
    if (c) return Promise.resolve(c);
    this.#running ??= this.#run().then(
      (cred) => {
        this.#cached = cred;
        this.#running = undefined;
        return cred;
      },
      (e) => {
        this.#running = undefined;
        throw e;
      },
    );
    return this.#running;
  }

  /** After a 401 to `used`: forgets it (unless already replaced) and runs the plugin. */
  async refresh(used: Credentials): Promise<boolean> {
    const c = this.#cached;
    if (c && sameExec(c, used)) this.#cached = undefined;
    return !sameExec(await this.get(), used);
  }
}

function sameExec(c: ExecCredential, used: Credentials): boolean {
  if (c.token !== undefined && used.headers.Authorization !== `Bearer ${c.token}`) return false;
  return c.cert === undefined || c.cert === used.cert;
}

/** What {@link credentialSource} needs besides the user. */
export interface SourceContext {
  cluster: KubeCluster;
  caPem: string | undefined;
  clock: Clock;
  /** The merged kubeconfig and the selected context, for client-node's auth providers. */
  raw: Record<string, unknown>;
  context: string;
}

/**
 * Builds the credential source of a kubeconfig user. Reads files now, so that a missing or
 * unusable file is reported at load time.
 *
 * @throws {Error} One line, when a file cannot be read or the configuration is unsupported.
 */
export async function credentialSource(
  user: KubeUser,
  ctx: SourceContext,
): Promise<CredentialSource> {
  const base: Record<string, string> = {};
  const repeated = impersonation(user);
  if (user.as) base["Impersonate-User"] = user.as;
  if (user["as-uid"]) base["Impersonate-Uid"] = user["as-uid"];
  if (user.username !== undefined || user.password !== undefined) {
    const bytes = new TextEncoder().encode(`${user.username ?? ""}:${user.password ?? ""}`);
    base.Authorization = `Basic ${btoa(String.fromCharCode(...bytes))}`;
  }
  if (user.token) base.Authorization = `Bearer ${user.token}`;

  const cert = decodeData(user["client-certificate-data"], "client-certificate-data");
  const key = decodeData(user["client-key-data"], "client-key-data");
  const certFile = !cert && user["client-certificate"]
    ? new FileValue(user["client-certificate"], "client-certificate", ctx.clock, false)
    : undefined;
  const keyFile = !key && user["client-key"]
    ? new FileValue(user["client-key"], "client-key", ctx.clock, false)
    : undefined;
  const tokenFile = user.tokenFile
    ? new FileValue(user.tokenFile, "tokenFile", ctx.clock, true)
    : undefined;
  for (const f of [certFile, keyFile, tokenFile]) f?.readNow();
  if (cert && !key && !keyFile) {
    throw new CredentialsError("client-certificate is set but client-key is not");
  }
  if (!cert && !certFile && (key || keyFile)) {
    throw new CredentialsError("client-key is set but client-certificate is not");
  }

  const exec = user.exec
    ? new ExecValue(() => runExecPlugin(user.exec!, ctx.cluster, ctx.caPem), ctx.clock)
    : undefined;
  const provider = user["auth-provider"]
    ? await authProviderCredentials(ctx.raw, ctx.context)
    : undefined;

  if (!certFile && !keyFile && !tokenFile && !exec && !provider) {
    const fixed: Credentials = { headers: base, repeatedHeaders: repeated, cert, key };
    const same = Promise.resolve(fixed);
    return { credentials: () => same, invalidate: () => Promise.resolve(false), dynamic: false };
  }

  // Built again only when a part changed, so a request usually allocates nothing here.
  let last: Credentials | undefined;
  let lastParts: (string | undefined)[] = [];
  const assemble = (parts: (string | undefined)[]): Credentials => {
    if (last && parts.every((p, i) => p === lastParts[i])) return last;
    const [token, c, k] = parts;
    const headers = token === undefined ? base : { ...base, Authorization: `Bearer ${token}` };
    lastParts = parts;
    last = { headers, repeatedHeaders: repeated, cert: c, key: k };
    return last;
  };

  return {
    dynamic: true,
    async credentials(): Promise<Credentials> {
      if (provider) {
        const p = await provider();
        return {
          headers: { ...base, ...p.headers },
          repeatedHeaders: repeated,
          cert: p.cert ?? cert,
          key: p.key ?? key,
        };
      }
      let token: string | undefined;
      let c = cert, k = key;
      if (certFile) c = certFile.fresh() ?? await certFile.get();
      if (keyFile) k = keyFile.fresh() ?? await keyFile.get();
      if (tokenFile) token = tokenFile.fresh() ?? await tokenFile.get();
      if (exec) {
        const e = exec.fresh() ?? await exec.get();
        if (e.token) token = e.token;
        if (e.cert) [c, k] = [e.cert, e.key];
      }
      return assemble([token, c, k]);
    },
    async invalidate(used: Credentials): Promise<boolean> {
      if (exec) return await exec.refresh(used);
      let changed = false;
      for (const f of [tokenFile, certFile, keyFile]) if (f && await f.reload()) changed = true;
      return changed;
    },
  };
}

/**
 * The repeated impersonation headers of a user, as client-go's impersonating round tripper
 * sends them: one `Impersonate-Group` per group, one `Impersonate-Extra-<key>` per value, the
 * key percent-encoded where it is not a header token character (and `%` itself).
 *
 * @throws {Error} When groups or extra fields are set without `as`, as client-go refuses them.
 */
function impersonation(user: KubeUser): [string, string][] | undefined {
  const groups = user["as-groups"] ?? [];
  const extra = Object.entries(user["as-user-extra"] ?? {});
  if (groups.length === 0 && extra.length === 0) return undefined;
  if (!user.as) {
    throw new CredentialsError(
      "as-groups or as-user-extra is set without as (impersonating groups or extra fields " +
        "needs a user to impersonate); set as, or remove them",
    );
  }
  const out: [string, string][] = groups.map((g) => ["Impersonate-Group", String(g)]);
  for (const [key, values] of extra) {
    const name = `Impersonate-Extra-${headerKeyEscape(key)}`;
    for (const v of Array.isArray(values) ? values : [values]) out.push([name, String(v)]);
  }
  return out;
}

/** client-go's headerKeyEscape: `%XX` for each byte that is no header token character, or `%`. */
function headerKeyEscape(key: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(key)) {
    const c = String.fromCharCode(b);
    out += b < 0x80 && /[A-Za-z0-9!#$&'*+\-.^_`|~]/.test(c)
      ? c
      : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Base64 `*-data` fields as PEM text. */
function decodeData(data: string | undefined, field: string): string | undefined {
  if (!data) return undefined;
  try {
    return new TextDecoder().decode(
      Uint8Array.from(atob(data.replace(/\s+/g, "")), (ch) => ch.charCodeAt(0)),
    );
  } catch {
    throw new CredentialsError(`${field} is not valid base64`);
  }
}
