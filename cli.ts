/**
 * kubeno's own command line: from nothing to a working, tested operator project, as
 * `kubebuilder init` / `create api` are for Go operators.
 *
 * ```sh
 * deno run -A jsr:@kubeno/kubeno/cli init myapp-operator --group apps.example.com --kind Myapp
 * cd myapp-operator
 * deno task dev      # a local control plane with the operator running
 * deno task test     # its test against a real control plane
 * deno run -A @kubeno/kubeno/cli create resource --group apps.example.com --version v1 --kind Backup
 * deno task compile  # one binary, with only the permissions an operator needs
 * ```
 *
 * Commands: `init`, `create resource`, `compile`, `version`, `help` (and `<command> --help`).
 * Exit codes: 0 ok, 1 runtime failure, 2 usage error; failures are one line on stderr naming
 * what was wrong and what to do.
 *
 * `src/tool/main.ts` parses and dispatches; each command lives in `src/tool/<command>.ts`.
 *
 * @example Run a command in-process and capture what it writes
 * ```ts
 * import { main, VERSION } from "./cli.ts";
 *
 * const out: string[] = [];
 * const code = await main(["version"], { out: (l) => out.push(l), err: () => {} });
 * if (code !== 0 || out[0] !== VERSION) throw new Error(out.join("\n"));
 * ```
 *
 * @module
 */
import { main } from "./src/tool/main.ts";

export { main, VERSION } from "./src/tool/main.ts";
export type { CommandIo } from "./src/util/cli_io.ts";
export { operatorPermissions, type OperatorPermissionsOptions } from "./src/tool/compile.ts";

if (import.meta.main) Deno.exit(await main(Deno.args));
