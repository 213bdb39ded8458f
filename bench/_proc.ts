// Contender processes for the benchmark harness: spawn one program, read its stdout line by
// line, and sample its CPU time and memory from /proc/<pid> while it is still alive, so the
// same numbers are read the same way for Deno, Go and Node.js programs alike.

/** CPU and memory of a process as read from /proc. */
export interface ProcSample {
  /** User + system CPU seconds of all its threads so far. */
  cpuSeconds: number;
  /** Peak resident set size (VmHWM), KiB. */
  peakRssKiB: number;
  /** Current resident set size (VmRSS), KiB. */
  rssKiB: number;
}

const CLOCK_TICKS = clockTicks();
const running = new Set<Deno.ChildProcess>();

// A harness that dies must not leave contenders behind.
globalThis.addEventListener("unload", () => {
  for (const child of running) {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }
});

function clockTicks(): number {
  try {
    const out = new Deno.Command("getconf", { args: ["CLK_TCK"] }).outputSync();
    const n = Number(new TextDecoder().decode(out.stdout).trim());
    if (n > 0) return n;
  } catch { /* fall through */ }
  return 100;
}

/**
 * Reads CPU time and memory of a live process.
 *
 * @param pid The process id.
 * @returns The sample.
 * @throws {Deno.errors.NotFound} When the process is gone.
 */
export function sampleProc(pid: number): ProcSample {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kib = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+)`, "m"))?.[1]);
  return { cpuSeconds: ticks / CLOCK_TICKS, peakRssKiB: kib("VmHWM"), rssKiB: kib("VmRSS") };
}

/** A spawned contender: its pid, its stdout as lines, and a way to stop it. */
export class Contender implements AsyncDisposable {
  /** What runs, for messages. */
  readonly name: string;
  /** The process id (the program itself, not a shell). */
  readonly pid: number;
  /** `performance.now()` just before the spawn. */
  readonly spawnedAt: number;
  readonly #child: Deno.ChildProcess;
  readonly #lines: string[] = [];
  readonly #waiters = new Set<() => void>();
  readonly #stderr: Promise<string>;
  readonly #stdoutDone: Promise<void>;
  #exitCode: number | undefined;

  /**
   * Spawns `cmd` with `args`; stdout is read as lines, stderr is kept for error messages.
   *
   * @param name A label for messages.
   * @param cmd The program.
   * @param args Its arguments.
   * @param options Working directory and extra environment.
   */
  constructor(
    name: string,
    cmd: string,
    args: string[],
    options: { cwd?: string; env?: Record<string, string> } = {},
  ) {
    this.name = name;
    this.spawnedAt = performance.now();
    this.#child = new Deno.Command(cmd, {
      args,
      cwd: options.cwd,
      env: options.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    running.add(this.#child);
    this.pid = this.#child.pid;
    this.#child.status.then((s) => {
      this.#exitCode = s.code;
      running.delete(this.#child);
      this.#wake();
    });
    this.#stdoutDone = this.#readLines(this.#child.stdout);
    this.#stderr = new Response(this.#child.stderr).text().catch(() => "");
  }

  /** The stdout lines read so far (all of them once `stop()` has returned). */
  get lines(): readonly string[] {
    return this.#lines;
  }

  /** The exit code once exited, else `undefined`. */
  get exitCode(): number | undefined {
    return this.#exitCode;
  }

  async #readLines(stream: ReadableStream<Uint8Array>): Promise<void> {
    let buf = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        this.#lines.push(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        this.#wake();
      }
    }
    if (buf) this.#lines.push(buf);
    this.#wake();
  }

  #wake(): void {
    for (const w of this.#waiters) w();
  }

  /**
   * Waits for a stdout line that `match` accepts.
   *
   * @param match The test.
   * @param deadlineMs How long to wait.
   * @returns The line and `performance.now()` when it was read.
   * @throws {Error} When the process exits first or the deadline passes.
   */
  async waitForLine(
    match: (line: string) => boolean,
    deadlineMs: number,
  ): Promise<{ line: string; at: number }> {
    const deadline = performance.now() + deadlineMs;
    let seen = 0;
    for (;;) {
      for (; seen < this.#lines.length; seen++) {
        if (match(this.#lines[seen])) return { line: this.#lines[seen], at: performance.now() };
      }
      if (this.#exitCode !== undefined) {
        await this.#stdoutDone;
        if (seen < this.#lines.length) continue;
        throw new Error(
          `${this.name} exited with code ${this.#exitCode} before printing the expected line:\n${await this
            .stderrTail()}`,
        );
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new Error(
          `${this.name} printed no expected line within ${deadlineMs} ms:\n${await this
            .stderrTail()}`,
        );
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(left, 1_000));
        this.#waiters.add(done);
      });
    }
  }

  /**
   * Reads CPU time and memory now.
   *
   * @returns The sample.
   * @throws {Error} When the process has exited.
   */
  sample(): ProcSample {
    if (this.#exitCode !== undefined) {
      throw new Error(`Cannot sample ${this.name}: it exited with code ${this.#exitCode}`);
    }
    return sampleProc(this.pid);
  }

  /**
   * Waits until the process uses no CPU for `quietMs` (its RSS has then settled), up to
   * `deadlineMs`.
   *
   * @param quietMs The quiet window.
   * @param deadlineMs The most to wait.
   * @returns The sample at the end of the first quiet window (or at the deadline).
   */
  async settle(quietMs: number, deadlineMs: number): Promise<ProcSample> {
    const deadline = performance.now() + deadlineMs;
    let last = this.sample();
    for (;;) {
      await new Promise((r) => setTimeout(r, quietMs));
      const now = this.sample();
      if (now.cpuSeconds === last.cpuSeconds || performance.now() > deadline) return now;
      last = now;
    }
  }

  /** The last lines the process wrote to stderr (complete once it has exited). */
  async stderrTail(lines = 20): Promise<string> {
    if (this.#exitCode === undefined) return "(still running)";
    const text = await this.#stderr;
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  }

  /**
   * Sends SIGTERM and waits for exit; SIGKILL after `graceMs`.
   *
   * @param graceMs How long to wait before SIGKILL.
   * @returns The exit code.
   */
  async stop(graceMs = 15_000): Promise<number> {
    if (this.#exitCode === undefined) {
      try {
        this.#child.kill("SIGTERM");
      } catch { /* exited meanwhile */ }
      const timer = setTimeout(() => {
        try {
          this.#child.kill("SIGKILL");
        } catch { /* exited meanwhile */ }
      }, graceMs);
      await this.#child.status;
      clearTimeout(timer);
    }
    await this.#stdoutDone;
    return this.#exitCode!;
  }

  /** Same as {@linkcode Contender.prototype.stop}, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
