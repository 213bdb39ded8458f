// Shared helpers for tests against the real control plane. Wait on conditions with
// deadlines; never sleep a fixed time to let things settle.
import https from "node:https";
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
 * Runs `deno run -A --quiet <example> install <kubeconfig>` (the CRDs and webhook
 * configurations), and throws its stderr when it fails.
 *
 * @param example The example's path.
 * @param kubeconfig The `--kubeconfig=...` flag.
 * @param env The environment.
 */
export async function installExample(
  example: string,
  kubeconfig: string,
  env: Record<string, string> = { ...EXAMPLE_ENV },
): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", example, "install", kubeconfig],
    env,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(
      `${example} install exited ${out.code}: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
}

/** An example operator running as a user runs it, see {@linkcode startExample}. */
export interface RunningExample {
  /** The process. */
  readonly proc: Deno.ChildProcess;
  /** Everything it wrote to stderr so far. */
  logs(): string;
  /** The stderr lines that match `re`. */
  lines(re: RegExp): string[];
  /**
   * Sends `signal` (unless it exited) and waits for the exit and the end of its output.
   *
   * @param signal The signal.
   * @returns The exit status.
   */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
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
  const proc = new Deno.Command(Deno.execPath(), {
    args: options.argv ?? ["run", "-A", "--quiet", example, "run", ...args],
    cwd: options.cwd,
    env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let logs = "";
  const pump = (async () => {
    for await (const chunk of proc.stderr.pipeThrough(new TextDecoderStream())) logs += chunk;
  })();
  return {
    proc,
    logs: () => logs,
    lines: (re) => logs.split("\n").filter((l) => re.test(l)),
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
