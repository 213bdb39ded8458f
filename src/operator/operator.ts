/**
 * `operator({...}).main()`: the command line of every kubeno operator. It parses arguments
 * and dispatches to a subcommand (each in its own `cmd_*.ts`):
 *
 * - `run` (the default): start the controllers until SIGINT/SIGTERM, then stop gracefully;
 * - `install` / `uninstall`: apply / delete the operator's CRDs (and webhook configurations);
 * - `manifests`: print the YAML that deploys the operator (CRDs, RBAC, Deployment);
 * - `migrate-storage`: after an API version change, rewrite stored objects at the storage
 *   version and trim the CRDs' `status.storedVersions`;
 * - `version`, `help` (also `--help`, `-h`, `<command> --help`).
 *
 * Global flags: `--kubeconfig`, `--context`, `--namespace` (the operator's namespace),
 * `--log-level debug|info|warning|error`, `--log-format json|pretty`.
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 usage error. Failures are one line on stderr naming
 * what was wrong and what to do; only unexpected errors add a stack, and only with
 * `--log-level debug`.
 *
 * Everything is generated from the definitions compiled into the program — no manifest file
 * is read at run time — so a `deno compile`d operator carries its own CRDs and RBAC.
 *
 * @module
 */
import { defineOperator, dispatch } from "./_dispatch.ts";
import { consoleIo } from "../util/cli_io.ts";
import type { OperatorOptions } from "./command/options.ts";

/** An operator program: its command line. */
export interface Operator {
  /** The operator's name. */
  readonly name: string;
  /** The operator's version. */
  readonly version: string;
  /**
   * Runs the command line and returns its exit code, which it also sets as `Deno.exitCode`:
   * `await operator({...}).main()` as the last statement makes the process exit with it. It
   * calls `Deno.exit` only when `run` gets a second SIGINT or SIGTERM while it drains (the
   * user asked not to wait); see `mainAndExit`.
   *
   * @param args The arguments, without the program name.
   * @returns 0 ok, 1 runtime failure, 2 usage error.
   */
  main(args?: readonly string[]): Promise<number>;
  /**
   * Runs `main` and exits the process with its code, even if something still holds the
   * event loop open.
   *
   * @param args The arguments, without the program name.
   * @returns Never.
   */
  mainAndExit(args?: readonly string[]): Promise<never>;
}

/**
 * Describes an operator program from its controllers. `run` starts the controllers;
 * `install` and `manifests` are generated from the controllers' resources (custom resources
 * made with `defineResource` carry their CRD) and from `resources`.
 *
 * @param options Name, controllers, and optionally version, extra resources, webhooks,
 * image, namespace, leader election and extra RBAC rules.
 * @returns The operator; call `main()`.
 * @throws {TypeError} When `name` is not a DNS label, two controllers share a name, or two
 * different resources have the same CRD name.
 * @throws {RangeError} When a leader-election duration is not a positive number.
 *
 * @example An operator's entry point
 * ```ts ignore — main() runs the operator program against a live API server until stopped
 * import { operator } from "./operator.ts";
 * import { reconcile } from "../runtime/controller/reconcile.ts";
 * import { defineResource } from "../schema/define_resource.ts";
 * import { z } from "../util/zod.ts";
 *
 * const Widget = defineResource({
 *   group: "example.com", version: "v1", kind: "Widget",
 *   spec: z.object({ size: z.int() }),
 * });
 * const controller = reconcile(Widget, { reconcile(w, ctx) { ctx.log.info("saw {key}", { key: ctx.key }); } });
 * if (import.meta.main) await operator({ name: "widget-operator", controllers: [controller] }).main();
 * ```
 *
 * @example Print the version without a cluster
 * ```ts
 * import { operator } from "./operator.ts";
 * const op = operator({ name: "widget-operator", version: "1.2.3", controllers: [] });
 * const code = await op.main(["version"]);
 * if (code !== 0 || op.version !== "1.2.3") throw new Error();
 * ```
 */
export function operator(options: OperatorOptions): Operator {
  const def = defineOperator(options);
  const main = async (args: readonly string[] = Deno.args) => {
    // The program's entry is the one place that may end the process at once (`run`, on a
    // second SIGINT or SIGTERM); everything below returns its exit code instead.
    const code = await dispatch(def, args, consoleIo, (code) => Deno.exit(code));
    Deno.exitCode = code;
    return code;
  };
  return Object.freeze({
    name: def.name,
    version: def.version,
    main,
    async mainAndExit(args?: readonly string[]): Promise<never> {
      Deno.exit(await main(args));
    },
  });
}
