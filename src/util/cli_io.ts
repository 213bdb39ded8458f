/**
 * What both of kubeno's command lines share — the operator program's (`src/operator/`) and
 * kubeno's own tool (`src/tool/`): where a command writes, and how a failure becomes the
 * one line a user sees.
 *
 * @module
 */

/** Where a command writes: lines for the user (`out`) and diagnostics (`err`). */
export interface CommandIo {
  /** Writes one line of normal output. */
  out(line: string): void;
  /** Writes one line of diagnostics. */
  err(line: string): void;
}

/** Writes to the process's stdout and stderr. */
export const consoleIo: CommandIo = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

/**
 * The first line of an error's message, for one-line failures.
 *
 * @param err What was thrown.
 * @returns Its first non-empty line.
 *
 * @example Shorten a multi-line message
 * ```ts
 * import { firstLine } from "./cli_io.ts";
 * if (firstLine(new Error("a\nb")) !== "a") throw new Error();
 * ```
 */
export function firstLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split("\n").map((l) => l.trim()).find(Boolean) ?? "unknown error";
}
