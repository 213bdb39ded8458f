// SIGINT and SIGTERM for `run`: the first stops gracefully, a second one exits at once with
// code 1; one within a second of the first is its echo (`deno task` forwards a terminal's
// Ctrl-C, which also reaches the process directly) and is ignored, even after `run` returned.
import { EXIT } from "../../util/args.ts";
import { getLogger } from "../../util/log.ts";

const log = getLogger(["kubeno", "operator"]);

// A second signal exits through the `exit` the program's entry hands down (the only code that
// ends the process).
/** How long after a stopping signal another one counts as its echo, not a new request. */
const ECHO_WINDOW_MS = 1_000;

/** Options of {@linkcode stopSignals}. */
export interface StopSignalsOptions {
  /** The operator's name, for the line on a second signal. */
  name: string;
  /** Where that line goes. */
  err(line: string): void;
  /** Ends the process at once; absent, a second signal is ignored. */
  exit?: (code: number) => void;
}

/** The stop requested by a signal, until disposed. */
export interface StopSignals extends Disposable {
  /** Aborts on the first signal. */
  readonly signal: AbortSignal;
}

/**
 * Listens for SIGINT and SIGTERM (SIGINT only on Windows) until disposed.
 *
 * @param options The operator's name, where to write and how to exit.
 * @returns The stop signal; dispose it to remove the listeners.
 */
export function stopSignals(options: StopSignalsOptions): StopSignals {
  const stop = new AbortController();
  let signals = 0;
  let firstAt = 0;
  const onSignal = () => {
    if (signals > 0 && Date.now() - firstAt < ECHO_WINDOW_MS) return;
    firstAt ||= Date.now();
    if (++signals > 1) {
      options.err(`${options.name}: Second signal received; exiting without waiting`);
      options.exit?.(EXIT.failure);
      return;
    }
    log.info("Received a termination signal; shutting down");
    stop.abort();
  };
  const sigs: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  for (const s of sigs) Deno.addSignalListener(s, onSignal);
  return {
    signal: stop.signal,
    [Symbol.dispose]() {
      for (const s of sigs) Deno.removeSignalListener(s, onSignal);
      // The echo of the Ctrl-C that stopped us (`deno task` forwards its copy) may land after
      // the listeners are gone, while the caller still cleans up (`deno task dev` stops its
      // control plane): without a listener it would kill the process with code 130.
      if (signals > 0) swallowEchoes(sigs, firstAt + ECHO_WINDOW_MS);
    },
  };
}

/**
 * Ignores `sigs` until `until` (epoch ms), then restores their default action. The timer does
 * not keep the process alive.
 */
function swallowEchoes(sigs: Deno.Signal[], until: number): void {
  const ignore = () => {};
  for (const s of sigs) Deno.addSignalListener(s, ignore);
  const timer = setTimeout(() => {
    for (const s of sigs) Deno.removeSignalListener(s, ignore);
  }, Math.max(0, until - Date.now()));
  Deno.unrefTimer(timer);
}
