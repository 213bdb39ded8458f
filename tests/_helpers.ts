// Shared helpers for tests against the real control plane. Wait on conditions with
// deadlines; never sleep a fixed time to let things settle.
import assert from "node:assert/strict";
import https from "node:https";
import { toYaml } from "../src/util/yaml.ts";
import type { KubeObject } from "../src/core/object.ts";
import { type Client, createClient } from "../src/client/client.ts";
import type { ControlPlane } from "../src/testing/control_plane.ts";
import { type FaultProxy, startFaultProxy } from "../src/testing/fault_proxy.ts";
import type { WatchClient } from "../src/runtime/watch/watch.ts";
import {
  defaultControllerRateLimiter,
  type RateLimiter,
} from "../src/runtime/queue/rate_limiter.ts";

/** Options of {@linkcode waitFor}. */
export interface WaitForOptions {
  /**
   * Give up after this long.
   * @default 30_000
   */
  timeoutMs?: number;
  /**
   * Time between checks.
   * @default 25
   */
  intervalMs?: number;
  /** Named in the timeout error. */
  what?: string;
}

/**
 * Resolves with the first truthy result of `cond` (sync or async), checking until the
 * deadline. A throwing check counts as "not yet"; its last error is named on timeout.
 *
 * @param cond The condition to wait for.
 * @param options Deadline, interval and a description for the error.
 * @returns The truthy value `cond` returned.
 * @throws {Error} When the deadline passes first.
 */
export async function waitFor<T>(
  cond: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: WaitForOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await cond();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : "";
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${options.what ?? "a condition"}${why}`,
      );
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 25));
  }
}

/**
 * Runs `fn` over `items` with at most `concurrency` calls in flight.
 *
 * @param items The inputs.
 * @param concurrency The most calls at once.
 * @param fn The call.
 * @returns The results, in input order.
 */
export async function mapConcurrent<I, O>(
  items: readonly I[],
  concurrency: number,
  fn: (item: I, index: number) => Promise<O>,
): Promise<O[]> {
  const out = new Array<O>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}

/** A fresh namespace name for one test. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** One watch request seen by a {@linkcode recordingClient}. */
export interface RecordedWatch {
  /** The request's options, without the signal. */
  options: Record<string, unknown>;
  /** Events the server delivered on it. */
  events: number;
  /** The resourceVersion of the last event it delivered. */
  lastResourceVersion?: string;
}

/**
 * Wraps a real client to record the list and watch requests sent through it, and to run
 * `before*` hooks (e.g. a real fault such as compaction) before a request is sent. Every
 * request still goes to the real API server.
 *
 * @param inner The real client.
 * @param hooks Called before the n-th (1-based) list or watch request is sent.
 * @returns The wrapping client and what it recorded.
 */
export function recordingClient(
  inner: WatchClient,
  hooks: {
    beforeList?(options: { continue?: string }, n: number): Promise<void> | void;
    beforeWatch?(n: number): Promise<void> | void;
  } = {},
) {
  const lists: Record<string, unknown>[] = [];
  const watches: RecordedWatch[] = [];
  let open = 0;
  const client: WatchClient = {
    async list(res, options) {
      lists.push({ ...options, signal: undefined });
      await hooks.beforeList?.(options, lists.length);
      return await inner.list(res, options);
    },
    async *watchEvents(res, options) {
      const rec: RecordedWatch = { options: { ...options, signal: undefined }, events: 0 };
      watches.push(rec);
      await hooks.beforeWatch?.(watches.length);
      open++;
      try {
        for await (const ev of inner.watchEvents(res, options)) {
          rec.events++;
          rec.lastResourceVersion = ev.object.metadata?.resourceVersion ?? rec.lastResourceVersion;
          yield ev;
        }
      } finally {
        open--;
      }
    },
    resetConnections: () => inner.resetConnections?.(),
  };
  return {
    client,
    lists,
    watches,
    /** Watch requests open now. */
    get openWatches(): number {
      return open;
    },
  };
}

/**
 * Whether `deno compile` can get its runtime (denort): `DENORT_BIN` is set, or the download
 * host answers. Tests of compiled binaries skip visibly, with that reason, when it cannot.
 *
 * @returns True when compiling is possible here.
 */
export async function denortAvailable(): Promise<boolean> {
  if (Deno.env.get("DENORT_BIN")) return true;
  return await denortDownloadable();
}

/** Whether denort can be downloaded, which is what a compile without DENORT_BIN needs. */
export async function denortDownloadable(): Promise<boolean> {
  try {
    const res = await fetch("https://dl.deno.land/", { signal: AbortSignal.timeout(3_000) });
    await res.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** The name suffix of a test skipped because `deno compile` cannot get denort here. */
export const COMPILE_SKIP_REASON =
  "(skipped: deno compile needs denort from the internet; set DENORT_BIN)";

/** GET over HTTPS with node:https (a self-signed certificate is accepted: it is the subject). */
export function httpsGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { rejectUnauthorized: false, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => body += c);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** What {@linkcode serviceAccountToken} needs of a control plane. */
interface AdminRequests {
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/**
 * Creates ServiceAccount `name` in `default`, optionally bound to a ClusterRole, and returns
 * an Authorization header with a token of it (as a Prometheus scraper would hold).
 */
export async function serviceAccountToken(
  cp: AdminRequests,
  name: string,
  clusterRole?: string,
): Promise<Record<string, string>> {
  const sa = await cp.request("POST", "/api/v1/namespaces/default/serviceaccounts", {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name },
  });
  if (sa.status !== 201) throw new Error(`Cannot create ServiceAccount ${name}: ${sa.status}`);
  if (clusterRole) {
    const binding = await cp.request(
      "POST",
      "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: `${name}-${clusterRole}` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: clusterRole },
        subjects: [{ kind: "ServiceAccount", name, namespace: "default" }],
      },
    );
    if (binding.status !== 201) throw new Error(`Cannot bind ${clusterRole}: ${binding.status}`);
  }
  const token = await cp.request(
    "POST",
    `/api/v1/namespaces/default/serviceaccounts/${name}/token`,
    { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} },
  );
  if (token.status !== 201) throw new Error(`Cannot get a token of ${name}: ${token.status}`);
  return { authorization: `Bearer ${token.body.status.token}` };
}

/**
 * The environment an example runs in outside a cluster: no colour, and no kubeconfig,
 * operator namespace or watch namespace from the machine's own environment.
 */
export const EXAMPLE_ENV: Readonly<Record<string, string>> = {
  NO_COLOR: "1",
  KUBECONFIG: "/nonexistent",
  POD_NAMESPACE: "",
  WATCH_NAMESPACE: "",
};

/**
 * A kubeconfig for `cp` that authenticates as an existing ServiceAccount (a fresh token of
 * it): what an operator deployed with its generated RBAC runs as.
 *
 * @param cp The control plane.
 * @param namespace The ServiceAccount's namespace.
 * @param name Its name.
 * @returns The kubeconfig, as YAML.
 */
export async function serviceAccountKubeconfig(
  cp: ControlPlane,
  namespace: string,
  name: string,
): Promise<string> {
  const token = await cp.request(
    "POST",
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} },
  );
  assert.equal(token.status, 201, JSON.stringify(token.body));
  return toYaml([{
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "c",
      cluster: { server: cp.server, "certificate-authority-data": btoa(cp.caCertPem) },
    }],
    users: [{ name, user: { token: token.body.status.token } }],
    contexts: [{ name: "c", context: { cluster: "c", user: name } }],
    "current-context": "c",
  }]);
}

/** A process whose stderr is collected, see {@linkcode spawnLogged}. */
export interface RunningProcess {
  /** The process. */
  readonly proc: Deno.ChildProcess;
  /** Everything it wrote to stderr so far. */
  logs(): string;
  /** The stderr lines that match `re`. */
  lines(re: RegExp): string[];
  /** Its exit status once it has exited: a "still running" check reads it, never races it. */
  exited(): Deno.CommandStatus | undefined;
  /**
   * Sends `signal` (unless it exited) and waits for the exit and the end of its output.
   *
   * @param signal The signal.
   * @returns The exit status.
   */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** An example operator running as a user runs it, see {@linkcode startExample}. */
export type RunningExample = RunningProcess;

/**
 * Spawns `program args` with no stdin or stdout, collecting its stderr.
 *
 * @param program The program.
 * @param args Its arguments.
 * @param options `env`: the environment to add; `cwd`: where to run it.
 * @returns The running process.
 */
export function spawnLogged(
  program: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): RunningProcess {
  const proc = new Deno.Command(program, {
    args,
    cwd: options.cwd,
    env: options.env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let logs = "";
  let exited: Deno.CommandStatus | undefined;
  proc.status.then((status) => exited = status);
  const pump = (async () => {
    for await (const chunk of proc.stderr.pipeThrough(new TextDecoderStream())) logs += chunk;
  })();
  return {
    proc,
    logs: () => logs,
    lines: (re) => logs.split("\n").filter((l) => re.test(l)),
    exited: () => exited,
    async stop(signal = "SIGTERM") {
      try {
        proc.kill(signal);
      } catch { /* exited */ }
      const status = await proc.status;
      await pump.catch(() => {});
      return status;
    },
  };
}

/**
 * Starts `deno run -A --quiet <example> run <args>`, the way the examples' headers say to run
 * them, collecting stderr (where the operator logs). With `options.argv`, runs
 * `deno <argv>` instead (a command exactly as documented), in `options.cwd`.
 *
 * @param example The example's path.
 * @param args Flags after `run`.
 * @param env The environment to add.
 * @param options `argv`: Deno's whole argument list; `cwd`: where to run it.
 * @returns The running operator.
 */
export function startExample(
  example: string,
  args: string[],
  env: Record<string, string>,
  options: { argv?: string[]; cwd?: string } = {},
): RunningExample {
  return spawnLogged(
    Deno.execPath(),
    options.argv ?? ["run", "-A", "--quiet", example, "run", ...args],
    { env, cwd: options.cwd },
  );
}

/**
 * `kubectl apply -f <path>`, tried until it is admitted (an operator's webhook may not serve
 * yet).
 *
 * @param cp The control plane.
 * @param path The manifest.
 * @param timeoutMs How long to keep trying.
 */
export async function applyAdmitted(
  cp: { kubectl(...args: string[]): Promise<{ code: number; stderr: string }> },
  path: string,
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(async () => {
    const r = await cp.kubectl("apply", "-f", path);
    if (r.code !== 0) throw new Error(r.stderr.trim());
    return true;
  }, { timeoutMs, intervalMs: 250, what: "kubectl apply of the sample" });
}

/**
 * `deno run -A --quiet <program> install --kubeconfig <path>`, asserting that it exits 0 (its
 * stderr the message).
 *
 * @param program The operator program.
 * @param kubeconfig The kubeconfig's path.
 * @param env The environment to add.
 * @returns What it wrote.
 */
export async function installOperator(
  program: string,
  kubeconfig: string,
  env?: Record<string, string>,
): Promise<{ stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", program, "install", "--kubeconfig", kubeconfig],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  return { stdout, stderr };
}

/** A rate limiter that records each delay it hands out, per key. */
export function recordingLimiter(whens: Map<string, number[]>): RateLimiter<string> {
  const inner = defaultControllerRateLimiter<string>();
  return {
    when(key) {
      const ms = inner.when(key);
      whens.set(key, [...(whens.get(key) ?? []), ms]);
      return ms;
    },
    forget: (key) => inner.forget(key),
    numRequeues: (key) => inner.numRequeues(key),
  };
}

/**
 * Watches of `resource` (a plural, e.g. `secrets`) open in kube-apiserver, by its own gauge
 * `apiserver_longrunning_requests`.
 */
export async function serverWatches(cp: AdminRequests, resource: string): Promise<number> {
  const { body } = await cp.request("GET", "/metrics");
  return String(body).split("\n")
    .filter((l) =>
      l.startsWith("apiserver_longrunning_requests{") && l.includes(`resource="${resource}"`) &&
      l.includes('verb="WATCH"')
    )
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

/** The widget operator fixture the CLI tests run (`tests/fixtures/widget_operator.ts`). */
export const WIDGET_OPERATOR = new URL("./fixtures/widget_operator.ts", import.meta.url).pathname;

/**
 * The widget operator fixture with `args`, outside any cluster: no kubeconfig, no namespace
 * from the environment, no colours; stdout and stderr piped.
 */
export function widgetOperatorCommand(args: string[], signal?: AbortSignal): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", WIDGET_OPERATOR, ...args],
    env: { NO_COLOR: "1", KUBECONFIG: "/nonexistent", POD_NAMESPACE: "", WATCH_NAMESPACE: "" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal,
  });
}

/** `run`'s flags that turn off the servers a test does not read: metrics, probes and webhooks. */
export const NO_SERVERS: readonly string[] = [
  "--metrics-bind-address=0",
  "--health-probe-bind-address=0",
  "--webhook-port=0",
];

/** The argv of `deno run -A --quiet <program> run <flags>`: an operator's `run` command. */
export function runArgv(program: string, flags: readonly string[]): string[] {
  return ["run", "-A", "--quiet", program, "run", ...flags];
}

/** A finished command's exit code and its output as text. */
export function decodeOutput(
  out: Deno.CommandOutput,
): { code: number; stdout: string; stderr: string } {
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A scenario's report lines, see {@linkcode reportLog}. */
export interface ReportLog {
  /** Writes a progress line. */
  say(line: string): void;
  /** Records a measured line and writes it. */
  measure(line: string): void;
  /** What went wrong. */
  problems: string[];
  /** What was measured. */
  measured: string[];
}

/**
 * Collects a scenario's problems and measured lines, writing progress to `log`.
 *
 * @param log Where progress goes; nowhere by default.
 * @returns The report's lines.
 */
export function reportLog(log?: (line: string) => void): ReportLog {
  const say = log ?? (() => {});
  const measured: string[] = [];
  return {
    say,
    measure(line) {
      measured.push(line);
      say(line);
    },
    problems: [],
    measured,
  };
}

/**
 * Writes kubeconfigs of one cluster and one user each into `dir` (`kc-0.yaml`, `kc-1.yaml`…).
 *
 * @param dir Where they go.
 * @param server The API server's URL.
 * @param defaults Fields every `clusters[].cluster` entry has.
 * @returns A function that writes one for a `users[].user` entry and more `cluster` fields,
 *   and returns its path.
 */
export function kubeconfigWriter(
  dir: string,
  server: string,
  defaults: Record<string, unknown> = {},
): (user: Record<string, unknown>, cluster?: Record<string, unknown>) => Promise<string> {
  let n = 0;
  return async (user, cluster = {}) => {
    const path = `${dir}/kc-${n++}.yaml`;
    await Deno.writeTextFile(
      path,
      toYaml([{
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server, ...defaults, ...cluster } }],
        users: [{ name: "u", user }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      }]),
    );
    return path;
  };
}

/**
 * The non-blank lines of a process's output, each with its JSON when it is JSON (a last line
 * without its newline is yielded as text).
 *
 * @param stream The output.
 * @returns The lines as they arrive.
 */
export async function* jsonLines<J>(
  stream: ReadableStream<Uint8Array>,
): AsyncGenerator<{ raw: string; json?: J }> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    for (const raw of parts) {
      if (!raw.trim()) continue;
      let json: J | undefined;
      try {
        json = JSON.parse(raw);
      } catch { /* a plain text line */ }
      yield { raw, json };
    }
  }
  if (rest.trim()) yield { raw: rest };
}

/**
 * {@linkcode waitFor} with the description first, as some tests read.
 *
 * @param intervalMs How often it polls.
 * @returns `until(what, fn, timeoutMs = 30_000)`.
 */
export function untilEvery(
  intervalMs: number,
): <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs?: number) => Promise<T> {
  return (what, fn, timeoutMs = 30_000) => waitFor(fn, { what, timeoutMs, intervalMs });
}

/**
 * The spec of a Deployment "web": `replicas` pods of one nginx container, labelled
 * `app: web`.
 *
 * @param replicas How many pods.
 * @returns The spec.
 */
export function webDeploymentSpec(replicas: number) {
  return {
    replicas,
    selector: { matchLabels: { app: "web" } },
    template: {
      metadata: { labels: { app: "web" } },
      spec: { containers: [{ name: "web", image: "nginx" }] },
    },
  };
}

/**
 * A ClusterRole of `rules` and its ClusterRoleBinding to the user of the same name.
 *
 * @param user The user's name, also the role's and the binding's.
 * @param rules The role's rules.
 * @returns The two objects.
 */
export function userClusterRole(user: string, rules: Record<string, unknown>[]): KubeObject[] {
  const rbac = "rbac.authorization.k8s.io";
  return [{
    apiVersion: `${rbac}/v1`,
    kind: "ClusterRole",
    metadata: { name: user },
    rules,
  } as KubeObject, {
    apiVersion: `${rbac}/v1`,
    kind: "ClusterRoleBinding",
    metadata: { name: user },
    roleRef: { apiGroup: rbac, kind: "ClusterRole", name: user },
    subjects: [{ kind: "User", name: user, apiGroup: rbac }],
  } as KubeObject];
}

/** A client whose connections go through a fault proxy, see {@linkcode viaFaultProxy}. */
export interface ViaFaultProxy extends AsyncDisposable {
  /** The proxy in front of the API server. */
  proxy: FaultProxy;
  /** A client of the API server through the proxy. */
  client: Client;
}

/**
 * Starts a fault proxy in front of `cp`'s API server and a client through it; disposing it
 * closes the client, then the proxy.
 *
 * @param cp The control plane.
 * @returns The proxy and the client.
 */
export async function viaFaultProxy(cp: ControlPlane): Promise<ViaFaultProxy> {
  const proxy = await startFaultProxy({ target: cp.server });
  const client = await createClient({
    kubeconfig: await cp.writeKubeconfig({ server: proxy.url }),
  });
  return {
    proxy,
    client,
    async [Symbol.asyncDispose]() {
      client[Symbol.dispose]();
      await proxy[Symbol.asyncDispose]();
    },
  };
}
