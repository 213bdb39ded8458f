// A replica of an operator program (by default the widget operator,
// tests/fixtures/widget_operator.ts) as a Deployment's pod runs it: the process restarted
// whenever it exits, with the kubelet's back-off, and every exit recorded with its reason.
// Used by the chaos scenario (tests/_chaos.ts).
import { freePort } from "../src/testing/process.ts";
import { jsonLines } from "./_helpers.ts";

const FIXTURE = new URL("./fixtures/widget_operator.ts", import.meta.url).pathname;

/** The operator program a replica runs, besides its `run --leader-elect` flags. */
export interface ReplicaProgram {
  /** The program's entry module. */
  entry: string;
  /** Extra flags of each process, e.g. a webhook port chosen per process. */
  args?: () => string[];
  /** Extra environment variables. */
  env?: Record<string, string>;
  /**
   * Whether each process runs with `--leader-elect --leader-elect-namespace=default`; a
   * sharded operator runs without.
   * @default true
   */
  leaderElect?: boolean;
}

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** Why a replica's process ended, and when (ms since the scenario started). */
export interface Exit {
  replica: string;
  instance: number;
  atMs: number;
  code: number;
  signal: Deno.Signal | null;
  reason: string;
  /**
   * What ended it: the harness's SIGKILL, exit 1 after losing a Lease (leader election) or the
   * sharding membership, or anything else. Each scenario says which of them it allows.
   */
  kind: "sigkill" | "lease-lost" | "unexpected";
}

/** One process of a replica, with its stderr log lines (JSON) collected as they come. */
export class Instance {
  readonly lines: { raw: string; json?: Json; at: number }[] = [];
  readonly proc: Deno.ChildProcess;
  readonly status: Promise<Deno.CommandStatus>;
  readonly read: Promise<void>;
  readonly startedAt = Date.now();
  killedWith: Deno.Signal | undefined;
  exited = false;

  constructor(readonly probesPort: number, readonly args: string[], env: Record<string, string>) {
    this.proc = new Deno.Command(Deno.execPath(), {
      args,
      env,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.status = this.proc.status.then((s) => {
      this.exited = true;
      return s;
    });
    this.read = this.#collect();
  }

  async #collect(): Promise<void> {
    for await (const { raw, json } of jsonLines<Json>(this.proc.stderr)) {
      this.lines.push({ raw, json, at: Date.now() });
    }
  }

  logged(prefix: string) {
    return this.lines.filter((l) =>
      typeof l.json?.msg === "string" && l.json.msg.startsWith(prefix)
    );
  }

  /** The leader-election identity, from its first log line about the Lease. */
  get identity(): string | undefined {
    return this.logged("Attempting to acquire lease")[0]?.json?.identity;
  }

  kill(signal: Deno.Signal): void {
    this.killedWith = signal;
    try {
      this.proc.kill(signal);
    } catch { /* exited already */ }
  }

  async readyz(): Promise<number> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.probesPort}/readyz`);
      await res.body?.cancel();
      return res.status;
    } catch {
      return 0;
    }
  }
}

/**
 * A replica as a Deployment's pod runs it: its container restarted whenever it exits, with
 * the kubelet's doubling back-off (scaled down: 1 s doubling to 8 s, reset after 10 s up).
 */
export class SupervisedReplica {
  readonly instances: Instance[] = [];
  readonly exits: Exit[] = [];
  #stopping = false;
  #loop: Promise<void> | undefined;

  readonly program: ReplicaProgram;

  constructor(
    readonly name: string,
    readonly kubeconfig: string,
    readonly flags: string[],
    readonly t0: number,
    program?: ReplicaProgram,
  ) {
    this.program = program ??
      { entry: FIXTURE, env: { WIDGET_FIELD_MANAGER: `widget-${name}` } };
  }

  get current(): Instance | undefined {
    return this.instances.at(-1);
  }

  start(): void {
    this.#loop = this.#supervise();
  }

  async #supervise(): Promise<void> {
    let quickExits = 0;
    while (!this.#stopping) {
      const port = freePort();
      const inst = new Instance(port, [
        "run",
        "-A",
        "--quiet",
        this.program.entry,
        "run",
        "--kubeconfig",
        this.kubeconfig,
        ...(this.program.leaderElect === false
          ? []
          : ["--leader-elect", "--leader-elect-namespace=default"]),
        "--metrics-bind-address=0",
        `--health-probe-bind-address=127.0.0.1:${port}`,
        ...(this.program.args?.() ?? []),
        ...this.flags,
      ], {
        NO_COLOR: "1",
        KUBECONFIG: "/nonexistent",
        POD_NAMESPACE: "",
        WATCH_NAMESPACE: "",
        ...this.program.env,
      });
      this.instances.push(inst);
      const status = await inst.status;
      await inst.read;
      if (this.#stopping) return;
      this.exits.push(classify(this.name, this.instances.length, inst, status, this.t0));
      quickExits = Date.now() - inst.startedAt < 10_000 ? quickExits + 1 : 0;
      const backoff = Math.min(1_000 * 2 ** Math.max(0, quickExits - 1), 8_000);
      await new Promise((r) => setTimeout(r, backoff));
    }
  }

  /** Stops supervising and the current process (SIGTERM); resolves with its exit code. */
  async stop(): Promise<number | undefined> {
    this.#stopping = true;
    const inst = this.current?.exited ? undefined : this.current;
    inst?.kill("SIGTERM");
    const code = (await inst?.status)?.code;
    await this.#loop;
    return code;
  }

  /** Every log line of every instance. */
  lines() {
    return this.instances.flatMap((i) => i.lines);
  }
}

function classify(
  replica: string,
  instance: number,
  inst: Instance,
  status: Deno.CommandStatus,
  t0: number,
): Exit {
  const base = {
    replica,
    instance,
    atMs: Date.now() - t0,
    code: status.code,
    signal: status.signal,
  };
  if (inst.killedWith === "SIGKILL" && status.signal === "SIGKILL") {
    return { ...base, reason: "SIGKILL sent by the harness", kind: "sigkill" };
  }
  const lost = inst.lines.find((l) => /Lost the Lease|Lost sharding membership/.test(l.raw));
  if (status.code === 1 && lost) {
    const why = inst.logged("Lost lease")[0]?.json?.msg ?? lost.raw;
    return { ...base, reason: `Lease lost: ${why}`, kind: "lease-lost" };
  }
  const last = inst.lines.at(-1)?.raw ?? "(no output)";
  return {
    ...base,
    reason: `unexpected exit (code ${status.code}, signal ${status.signal}): ${last}`,
    kind: "unexpected",
  };
}
