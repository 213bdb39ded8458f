// A documented command run the way a user runs it in a terminal: in its own process group
// (as a shell's job control puts it), its output collected, Ctrl-C sent to the whole group
// (as a terminal does), and every process it started tracked through /proc so that a test
// can tell whether any is left behind.

/** A process seen in the command's tree. */
export interface Proc {
  pid: number;
  /** Its start time in clock ticks since boot: tells a pid reused later from this process. */
  start: string;
  /** Its command line, for messages. */
  cmdline: string;
}

function stat(pid: number): { state: string; ppid: number; start: string } | undefined {
  try {
    const s = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const rest = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return { state: rest[0], ppid: Number(rest[1]), start: rest[19] };
  } catch {
    return undefined;
  }
}

function cmdline(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ").trim();
  } catch {
    return "";
  }
}

/**
 * Every live descendant of `root` (and `root` itself), read from /proc.
 *
 * @param root The pid whose tree to read.
 * @returns The processes, `root` first.
 */
export function processTree(root: number): Proc[] {
  const children = new Map<number, number[]>();
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid)) continue;
    const s = stat(pid);
    if (!s) continue;
    children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
  }
  const out: Proc[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    const s = stat(pid);
    if (!s || s.state === "Z") continue;
    out.push({ pid, start: s.start, cmdline: cmdline(pid) });
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/**
 * Whether `p` still runs: the same pid with the same start time, and not a zombie.
 *
 * @param p A process from {@linkcode processTree}.
 * @returns True while it runs.
 */
export function alive(p: Proc): boolean {
  const s = stat(p.pid);
  return s !== undefined && s.state !== "Z" && s.start === p.start;
}

// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/** A command running in its own process group, as a terminal's foreground job. */
export class Session implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;
  readonly #pumps: Promise<void>[];
  /** Every process seen in its tree so far (sampled by {@linkcode Session.waitForOutput}). */
  readonly seen: Map<string, Proc> = new Map();
  /** stdout and stderr as they arrived, interleaved, without colour codes. */
  output = "";
  /** Resolves with the exit status. */
  readonly status: Promise<Deno.CommandStatus>;

  /**
   * Starts `command args` under `setsid`, so that it leads a new process group.
   *
   * @param command The program, e.g. `Deno.execPath()`.
   * @param args Its arguments, e.g. `["task", "dev"]`.
   * @param options Its working directory and environment.
   */
  constructor(
    command: string,
    args: string[],
    options: { cwd?: string; env?: Record<string, string> } = {},
  ) {
    this.#child = new Deno.Command("setsid", {
      args: [command, ...args],
      cwd: options.cwd,
      env: options.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.status = this.#child.status;
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      for await (const text of stream.pipeThrough(new TextDecoderStream())) {
        this.output += text.replace(ANSI, "");
      }
    };
    this.#pumps = [pump(this.#child.stdout), pump(this.#child.stderr)];
  }

  /** The process group's id: the pid of the command (setsid execs it in place). */
  get pid(): number {
    return this.#child.pid;
  }

  /** Adds the processes running now in the command's tree to {@linkcode Session.seen}. */
  sample(): Proc[] {
    const now = processTree(this.pid);
    for (const p of now) this.seen.set(`${p.pid}/${p.start}`, p);
    return now;
  }

  /**
   * Waits until the output matches `pattern`, sampling the process tree meanwhile.
   *
   * @param pattern What to wait for.
   * @param timeoutMs The deadline.
   * @returns The match.
   * @throws {Error} When the deadline passes or the command exits first, with its output.
   */
  async waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    let exited = false;
    this.status.then(() => exited = true);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (exited) await Promise.all(this.#pumps);
      this.sample();
      const m = this.output.match(pattern);
      if (m) return m;
      const why = exited
        ? "The command exited"
        : Date.now() > deadline
        ? `Timed out after ${timeoutMs} ms`
        : undefined;
      if (why) {
        throw new Error(`${why} before printing ${pattern}; output:\n${this.output.slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Sends SIGINT to the whole process group, as Ctrl-C in a terminal does. */
  ctrlC(): void {
    Deno.kill(-this.pid, "SIGINT");
  }

  /** Waits for the command to exit and its output to be read. */
  async exited(): Promise<Deno.CommandStatus> {
    const status = await this.status;
    await Promise.all(this.#pumps);
    return status;
  }

  /** Kills whatever of the tree still runs (only after a failure) and waits for the exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    for (const p of [...this.seen.values()].filter(alive).reverse()) {
      try {
        Deno.kill(p.pid, "SIGKILL");
      } catch { /* gone */ }
    }
    await this.exited().catch(() => {});
  }
}
