/**
 * Go's duration syntax (`90s`, `1m30s`, `500ms`, `1.5h`), the form kubebuilder's flags and
 * the API server's `timeout` query parameter use. Parsed in this one place.
 *
 * @module
 */

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/**
 * Parses a Go duration into milliseconds.
 *
 * @param text A duration such as `10s`, `1m30s` or `500ms` (units ms, s, m, h).
 * @returns Milliseconds, or `undefined` when `text` is not a duration.
 *
 * @example Durations as flags and the API server write them
 * ```ts
 * import { parseGoDuration } from "./duration.ts";
 * if (parseGoDuration("1m30s") !== 90_000 || parseGoDuration("500ms") !== 500) throw new Error();
 * if (parseGoDuration("10") !== undefined || parseGoDuration("5 s") !== undefined) throw new Error();
 * ```
 */
export function parseGoDuration(text: string): number | undefined {
  if (!/^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, n, u] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    ms += Number(n) * UNIT_MS[u as keyof typeof UNIT_MS];
  }
  return Math.round(ms);
}
