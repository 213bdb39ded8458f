/**
 * A real Kubernetes control plane on loopback for tests, benchmarks and local demos, in the
 * manner of controller-runtime's envtest: etcd and kube-apiserver (and, with `workloads`,
 * kube-controller-manager, kube-scheduler and kwok with fake nodes).
 *
 * @module
 */
import { realClock } from "../util/clock.ts";
import { type AssetName, KUBERNETES_VERSION, resolveAssets } from "./assets.ts";
import { freePort, reapOnExit, Supervised } from "./process.ts";
import { startWorkloads } from "./_workloads.ts";
import { createCa, issueCert, type IssuedCert } from "../util/x509.ts";
import { toYaml } from "../util/yaml.ts";
import { KubenoError } from "../util/error.ts";

/** Options for {@linkcode startControlPlane}. */
export interface ControlPlaneOptions {
  /**
   * Also run kube-controller-manager, kube-scheduler and kwok with fake nodes, so that
   * Deployments get Ready pods and garbage collection and namespace deletion work.
   * @default false
   */
  workloads?: boolean;
  /**
   * Fake nodes to create when `workloads` is set.
   * @default 2
   */
  nodes?: number;
  /** Extra kube-apiserver flags, e.g. `["--watch-cache=false"]`. */
  apiServerFlags?: string[];
  /**
   * kube-apiserver feature gates, merged over the defaults and passed as one
   * `--feature-gates` flag (do not pass that flag in `apiServerFlags` too). The default turns
   * on server-side sharded list and watch (KEP-5866, alpha since Kubernetes 1.36) when the
   * binary is 1.36 or later (older ones know no such gate, and ignore `shardSelector`); pass
   * `{ ShardedListAndWatch: false }` for a 1.36+ server that ignores it as older ones do.
   * @default { ShardedListAndWatch: true } on 1.36 and later, else none
   */
  featureGates?: Record<string, boolean>;
  /**
   * Static bearer tokens the API server accepts, written to its `--token-auth-file`: for
   * tests of token authentication. Users get no RBAC permissions unless their groups do
   * (`system:masters` has them all).
   * @default []
   */
  tokens?: StaticToken[];
  /**
   * Where progress lines go (building binaries, start-up).
   * @default writes to stderr only while binaries are being built
   */
  progress?: (line: string) => void;
  /**
   * How long to wait for each component to become healthy.
   * @default 60_000
   */
  timeoutMs?: number;
}

/** A static bearer token and the user it authenticates as (one `--token-auth-file` line). */
export interface StaticToken {
  /** The bearer token. */
  token: string;
  /** The user name it authenticates as. */
  user: string;
  /**
   * The user's UID.
   * @default the user name
   */
  uid?: string;
  /**
   * The user's groups.
   * @default []
   */
  groups?: string[];
}

/** Thrown when a control-plane component cannot start; the message includes its log tail. */
export class ControlPlaneError extends KubenoError {
  /** `"ControlPlaneError"`. */
  override name = "ControlPlaneError";
}

/** The result of running `kubectl`. */
export interface KubectlResult {
  /** kubectl's exit code; 0 on success. */
  code: number;
  /** What kubectl wrote to stdout. */
  stdout: string;
  /** What kubectl wrote to stderr. */
  stderr: string;
}

/**
 * A running control plane. Stop it with `stop()` or `await using`.
 */
export class ControlPlane implements AsyncDisposable {
  /** The API server's URL, e.g. `https://127.0.0.1:41234`. */
  readonly server: string;
  /** Path of an admin kubeconfig (client certificate in `system:masters`). */
  readonly kubeconfigPath: string;
  /** Temp folder holding certificates, data and logs; removed on stop. */
  readonly dir: string;
  /** The cluster CA certificate, PEM. */
  readonly caCertPem: string;
  /** etcd's client URL (plain HTTP on loopback). */
  readonly etcdUrl: string;
  /** The Kubernetes version of the binaries. */
  readonly version: string = KUBERNETES_VERSION;

  readonly #ca: IssuedCert;
  readonly #assets: Record<AssetName, string>;
  readonly #apiArgs: string[];
  readonly #procs: Supervised[] = [];
  readonly #reap: () => Promise<void>;
  readonly #timeoutMs: number;
  #apiserver: Supervised | undefined;
  #admin: Deno.HttpClient;
  #stopped = false;

  /** @internal Use {@linkcode startControlPlane}. */
  constructor(init: {
    dir: string;
    server: string;
    etcdUrl: string;
    ca: IssuedCert;
    admin: IssuedCert;
    assets: Record<AssetName, string>;
    apiArgs: string[];
    reap: () => Promise<void>;
    timeoutMs: number;
  }) {
    this.dir = init.dir;
    this.server = init.server;
    this.etcdUrl = init.etcdUrl;
    this.#ca = init.ca;
    this.caCertPem = init.ca.certPem;
    this.#assets = init.assets;
    this.#apiArgs = init.apiArgs;
    this.#reap = init.reap;
    this.#timeoutMs = init.timeoutMs;
    this.kubeconfigPath = `${init.dir}/admin.kubeconfig`;
    this.#admin = Deno.createHttpClient({
      caCerts: [init.ca.certPem],
      cert: init.admin.certPem,
      key: init.admin.keyPem,
    });
  }

  /** @internal */
  track(p: Supervised): Supervised {
    this.#procs.push(p);
    return p;
  }

  /** @internal */
  async waitHealthy(p: Supervised, url: string, client?: Deno.HttpClient): Promise<void> {
    const deadline = Date.now() + this.#timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      if (p.exitCode !== undefined) {
        throw new ControlPlaneError(
          `${p.name} exited with code ${p.exitCode} during start-up; last log lines:\n${await p
            .logTail()}`,
        );
      }
      try {
        const res = await fetch(url, { client, signal: AbortSignal.timeout(2000) });
        last = `HTTP ${res.status}`;
        await res.body?.cancel();
        if (res.ok) return;
      } catch (e) {
        last = (e as Error).message;
      }
      await realClock.sleep(100);
    }
    throw new ControlPlaneError(
      `${p.name} did not become healthy at ${url} within ${this.#timeoutMs} ms (${last}); last log lines:\n${await p
        .logTail()}`,
    );
  }

  /**
   * Sends a request to the API server as admin.
   *
   * @param method HTTP method.
   * @param path Path and query, e.g. `/api/v1/namespaces`.
   * @param body Sent as JSON when given.
   * @param headers Extra request headers, e.g. `accept` for table output.
   * @returns The status, the body (parsed when JSON) and the response headers (e.g. `warning`).
   */
  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: any; headers: Headers }> {
    const res = await fetch(`${this.server}${path}`, {
      method,
      client: this.#admin,
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch { /* not JSON */ }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  /** @internal Starts kube-apiserver and waits for /readyz and the `default` namespace. */
  async startApiServer(): Promise<void> {
    if (this.#apiserver && this.#apiserver.exitCode === undefined) return;
    this.#apiserver = this.track(
      new Supervised(
        "kube-apiserver",
        this.#assets["kube-apiserver"],
        this.#apiArgs,
        `${this.dir}/kube-apiserver.log`,
      ),
    );
    await this.waitHealthy(this.#apiserver, `${this.server}/readyz`, this.#admin);
    const deadline = Date.now() + this.#timeoutMs;
    while ((await this.request("GET", "/api/v1/namespaces/default")).status !== 200) {
      if (Date.now() > deadline) {
        throw new ControlPlaneError("The default namespace did not appear");
      }
      await realClock.sleep(100);
    }
  }

  /**
   * Stops kube-apiserver while keeping etcd (a fault hook for resilience tests).
   *
   * @param options `crash: true` kills it at once (SIGKILL), as the OOM killer would;
   * otherwise it gets SIGTERM and drains, which takes up to 10 s (then SIGKILL) while clients
   * hold watches open.
   */
  async stopApiServer(options: { crash?: boolean } = {}): Promise<void> {
    if (options.crash) await this.#apiserver?.kill();
    else await this.#apiserver?.stop();
  }

  /**
   * Stops and starts kube-apiserver on the same port with the same certificates.
   *
   * @param options `crash: true` kills it instead of stopping it gracefully.
   */
  async restartApiServer(options: { crash?: boolean } = {}): Promise<void> {
    await this.stopApiServer(options);
    await this.startApiServer();
  }

  /**
   * Compacts etcd's history up to its current revision, so watches resumed from an older
   * resourceVersion get 410 Gone (once the API server's watch cache no longer holds them).
   *
   * @returns The revision compacted to.
   */
  async compactEtcd(): Promise<number> {
    const status = await (await fetch(`${this.etcdUrl}/v3/maintenance/status`, {
      method: "POST",
      body: "{}",
    })).json();
    const revision = Number(status.header.revision);
    const res = await fetch(`${this.etcdUrl}/v3/kv/compaction`, {
      method: "POST",
      body: JSON.stringify({ revision, physical: true }),
    });
    const text = await res.text();
    if (!res.ok && !text.includes("compacted")) {
      throw new ControlPlaneError(`Cannot compact etcd to revision ${revision}: ${text}`);
    }
    return revision;
  }

  /**
   * Writes a kubeconfig for a client-certificate user.
   *
   * @param opts `user` (default admin), `groups`, `server` to point at e.g. a proxy, and the
   * client certificate's validity (`notBefore`, `validForMs`; e.g. an expired one for tests of
   * refused credentials).
   * @returns The file path.
   */
  async writeKubeconfig(
    opts: {
      user?: string;
      groups?: string[];
      server?: string;
      file?: string;
      notBefore?: Date;
      validForMs?: number;
    } = {},
  ): Promise<string> {
    const user = opts.user ?? "admin";
    const cert = await issueCert(
      {
        commonName: user,
        organizations: opts.groups ?? (user === "admin" ? ["system:masters"] : []),
        client: true,
        ...(opts.notBefore ? { now: opts.notBefore } : {}),
        ...(opts.validForMs ? { validForMs: opts.validForMs } : {}),
      },
      this.#ca,
    );
    const file = opts.file ??
      `${this.dir}/${user.replace(/[^a-zA-Z0-9_.-]/g, "_")}-${
        crypto.randomUUID().slice(0, 8)
      }.kubeconfig`;
    await Deno.writeTextFile(
      file,
      kubeconfigYaml(opts.server ?? this.server, this.caCertPem, user, cert),
    );
    return file;
  }

  /**
   * Creates a user that authenticates with a client certificate and has no RBAC permissions.
   *
   * @param name The user name (certificate CN).
   * @param groups Groups (certificate O).
   * @returns The path of a kubeconfig for that user.
   */
  createUser(name: string, groups: string[] = []): Promise<string> {
    return this.writeKubeconfig({ user: name, groups });
  }

  /** Runs kubectl against this control plane as admin. */
  async kubectl(...args: string[]): Promise<KubectlResult> {
    const out = await new Deno.Command(this.#assets.kubectl, {
      args: ["--kubeconfig", this.kubeconfigPath, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  }

  /** Path of a control-plane binary, e.g. `kubectl`. */
  binary(name: AssetName): string {
    return this.#assets[name];
  }

  /** @internal Stops every process, keeping the temp folder (used to retry start-up). */
  async stopProcesses(): Promise<void> {
    for (const p of [...this.#procs].reverse()) await p.stop();
    this.#procs.length = 0;
  }

  /** Stops every process (in reverse start order) and removes the temp folder. Idempotent. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.stopProcesses();
    this.#admin.close();
    await this.#reap();
  }

  /** Same as {@linkcode stop}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/**
 * Starts etcd and kube-apiserver on free loopback ports, with a generated CA, serving
 * certificate, client-certificate users and service-account keys, RBAC authorization, and
 * waits until the API server is ready and the `default` namespace exists. Missing binaries
 * are built once from the Go module proxy (see `testenv/build.sh`), or taken from
 * `KUBEBUILDER_ASSETS` / `TEST_ASSET_<NAME>` exactly as envtest does.
 *
 * @param options See {@linkcode ControlPlaneOptions}.
 * @returns The running control plane.
 * @throws {ControlPlaneError} When a component fails to start; includes its log tail.
 *
 * @example Start, use and stop
 * ```ts ignore — starts etcd and kube-apiserver (seconds, and Go or envtest binaries)
 * import { startControlPlane } from "./control_plane.ts";
 * await using cp = await startControlPlane();
 * console.log(cp.server, cp.kubeconfigPath);
 * ```
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const workloads = options.workloads ?? false;
  const names: AssetName[] = ["etcd", "kube-apiserver", "kubectl"];
  if (workloads) names.push("kube-controller-manager", "kube-scheduler", "kwok");
  const progress = options.progress ?? ((l: string) => console.error(l));
  const assets = await resolveAssets(names, progress);
  const timeoutMs = options.timeoutMs ?? 60_000;

  const minor = await apiServerMinor(assets["kube-apiserver"]);
  const gates = {
    ...(minor >= 36 ? DEFAULT_FEATURE_GATES : {}),
    ...options.featureGates,
  };
  const dir = await Deno.makeTempDir({ prefix: "kubeno-cp-" });
  const reap = reapOnExit(dir);
  let cp: ControlPlane | undefined;
  try {
    const ca = await createCa("kubeno-test-ca");
    const serving = await issueCert({
      commonName: "kube-apiserver",
      dnsNames: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
      ipAddresses: ["127.0.0.1", "10.0.0.1"],
      server: true,
    }, ca);
    const admin = await issueCert(
      { commonName: "admin", organizations: ["system:masters"], client: true },
      ca,
    );
    const sa = await createCa("service-accounts");
    const files: Record<string, string> = {
      "ca.crt": ca.certPem,
      "apiserver.crt": serving.certPem,
      "apiserver.key": serving.keyPem,
      "sa.key": sa.keyPem,
      "sa.pub": sa.publicKeyPem,
    };
    const tokenFlags: string[] = [];
    if (options.tokens?.length) {
      const csv = (v: string) => `"${v.replaceAll('"', '""')}"`;
      files["tokens.csv"] = options.tokens.map((t) =>
        [t.token, t.user, t.uid ?? t.user, (t.groups ?? []).join(",")].map(csv).join(",")
      ).join("\n") + "\n";
      tokenFlags.push(`--token-auth-file=${dir}/tokens.csv`);
    }
    for (const [f, c] of Object.entries(files)) await Deno.writeTextFile(`${dir}/${f}`, c);

    for (let attempt = 1;; attempt++) {
      const etcdPort = freePort(), peerPort = freePort(), apiPort = freePort();
      const etcdUrl = `http://127.0.0.1:${etcdPort}`;
      const server = `https://127.0.0.1:${apiPort}`;
      cp = new ControlPlane({
        dir,
        server,
        etcdUrl,
        ca,
        admin,
        assets,
        reap,
        timeoutMs,
        apiArgs: apiServerArgs(dir, etcdUrl, apiPort, [
          ...featureGatesFlag(gates),
          ...tokenFlags,
          ...(options.apiServerFlags ?? []),
        ]),
      });
      await Deno.writeTextFile(
        cp.kubeconfigPath,
        kubeconfigYaml(server, ca.certPem, "admin", admin),
      );
      try {
        const etcd = cp.track(
          new Supervised(
            "etcd",
            assets.etcd,
            etcdArgs(dir, attempt, etcdUrl, peerPort),
            `${dir}/etcd.log`,
          ),
        );
        await cp.waitHealthy(etcd, `${etcdUrl}/health`);
        await cp.startApiServer();
        break;
      } catch (e) {
        const tail = e instanceof Error ? e.message : String(e);
        await cp.stopProcesses();
        if (attempt >= 3 || !/address already in use|bind:/i.test(tail)) throw e;
      }
    }
    if (workloads) {
      await startWorkloads(cp, assets, options.nodes ?? 2).catch((e: Error) => {
        throw new ControlPlaneError(e.message, { cause: e });
      });
    }
    return cp;
  } catch (e) {
    if (cp) await cp.stop();
    else await reap();
    throw e;
  }
}

/** Feature gates the test control plane turns on unless told otherwise. */
const DEFAULT_FEATURE_GATES: Readonly<Record<string, boolean>> = { ShardedListAndWatch: true };

function featureGatesFlag(gates: Record<string, boolean>): string[] {
  const list = Object.entries(gates).map(([k, v]) => `${k}=${v}`).sort().join(",");
  return list ? [`--feature-gates=${list}`] : [];
}

/** The minor version of a kube-apiserver binary (`--version`), or Infinity when unknown. */
async function apiServerMinor(path: string): Promise<number> {
  try {
    const out = await new Deno.Command(path, { args: ["--version"], stdout: "piped" }).output();
    const m = new TextDecoder().decode(out.stdout).match(/v1\.(\d+)\./);
    return m ? Number(m[1]) : Infinity;
  } catch {
    return Infinity;
  }
}

function etcdArgs(dir: string, attempt: number, url: string, peerPort: number): string[] {
  const peer = `http://127.0.0.1:${peerPort}`;
  return [
    `--data-dir=${dir}/etcd-${attempt}`,
    "--name=default",
    `--listen-client-urls=${url}`,
    `--advertise-client-urls=${url}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=default=${peer}`,
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ];
}

function apiServerArgs(dir: string, etcdUrl: string, port: number, extra: string[]): string[] {
  return [
    `--etcd-servers=${etcdUrl}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${port}`,
    `--cert-dir=${dir}/apiserver-certs`,
    `--tls-cert-file=${dir}/apiserver.crt`,
    `--tls-private-key-file=${dir}/apiserver.key`,
    `--client-ca-file=${dir}/ca.crt`,
    "--authorization-mode=RBAC",
    "--service-cluster-ip-range=10.0.0.0/24",
    "--service-account-issuer=https://kubernetes.default.svc",
    `--service-account-key-file=${dir}/sa.pub`,
    `--service-account-signing-key-file=${dir}/sa.key`,
    "--allow-privileged=true",
    "--profiling=false",
    "--endpoint-reconciler-type=none",
    ...extra,
  ];
}

function kubeconfigYaml(server: string, caPem: string, user: string, cert: IssuedCert): string {
  const b64 = (s: string) => btoa(s);
  return toYaml([{
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "kubeno-test",
      cluster: { server, "certificate-authority-data": b64(caPem) },
    }],
    users: [{
      name: user,
      user: { "client-certificate-data": b64(cert.certPem), "client-key-data": b64(cert.keyPem) },
    }],
    contexts: [{ name: "kubeno-test", context: { cluster: "kubeno-test", user } }],
    "current-context": "kubeno-test",
  }]);
}
