/**
 * The machinery under `reconcile` and `operator`, each concept usable on its own and
 * exported from a subpath of its own, bottom to top:
 *
 * | import | what it holds |
 * |---|---|
 * | `@kubeno/kubeno/runtime/watch` | `watch()`: one resilient list+watch stream of `ObjectEvent`s |
 * | `@kubeno/kubeno/runtime/cache` | `Store`, `Informer`, `InformerFactory`, `CacheReader` |
 * | `@kubeno/kubeno/runtime/queue` | `WorkQueue` and its rate limiters |
 * | `@kubeno/kubeno/runtime/controller` | `reconcile()`, predicates, finalizers, Events, `ControllerRuntime` |
 * | `@kubeno/kubeno/runtime/manager` | `Manager`, runnables, leader election, health probes |
 * | `@kubeno/kubeno/runtime/unstable-sharding` | `ShardCoordinator` (alpha: KEP-5866 sharded list and watch) |
 *
 * This entry holds what all of them share: the injectable {@linkcode Clock} every timer is
 * set through (`FakeClock` in `@kubeno/kubeno/testing` drives it in tests) and the structured
 * logs every layer writes under the `["kubeno", ...]` categories.
 *
 * @example Logs of one's own, under kubeno's configuration
 * ```ts
 * import { configureLogging, getLogger, realClock, resetLogging } from "./runtime.ts";
 *
 * const lines: string[] = [];
 * await configureLogging({ level: "warn", format: "json", write: (l) => lines.push(l) });
 * const log = getLogger(["myapp", "reconcile"]);
 * log.info("Not written below warn");
 * log.warn("Took {ms} ms", { ms: 5 });
 * await resetLogging();
 * if (lines.length !== 1 || JSON.parse(lines[0]).msg !== "Took 5 ms") throw new Error(lines.join());
 * await realClock.sleep(1); // every timer of the runtime goes through a Clock
 * ```
 *
 * @module
 */
export { type Clock, realClock, type TimerId } from "./src/util/clock.ts";
export { KubenoError } from "./src/util/error.ts";
export {
  configureLogging,
  getLogger,
  type LogFormat,
  type Logger,
  type LoggingOptions,
  type LogLevel,
  resetLogging,
} from "./src/util/log.ts";
