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
 * This file only parses and dispatches; each command lives in `src/tool/<command>.ts`.
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
import denoJson from "./deno.json" with { type: "json" };
import type { KubenoCommand } from "./src/tool/common.ts";
import { type CommandIo, consoleIo, firstLine } from "./src/util/cli_io.ts";
import { UsageError } from "./src/util/args.ts";
import { compileCommand } from "./src/tool/compile.ts";
import { createCommand } from "./src/tool/create.ts";
import { initCommand } from "./src/tool/init.ts";

export type { CommandIo } from "./src/util/cli_io.ts";
export { operatorPermissions, type OperatorPermissionsOptions } from "./src/tool/compile.ts";

/** kubeno's version, from `deno.json`. */
export const VERSION: string = denoJson.version;

const COMMANDS: Record<string, KubenoCommand> = {
  init: initCommand,
  create: createCommand,
  compile: compileCommand,
};

const USAGE = `kubeno ${VERSION} — write Kubernetes operators in TypeScript on Deno

Usage: kubeno <command> [flags]

Commands:
${
  [
    ...Object.values(COMMANDS).map((c) => [c.name, c.summary]),
    ["version", "Print kubeno's version"],
    ["help", "Show this help; kubeno <command> --help for a command's"],
  ].map(([n, s]) => `  ${n.padEnd(17)}${s}`).join("\n")
}

Start with:  kubeno init myapp-operator`;

/**
 * Runs the CLI with the given arguments.
 *
 * @param args Command-line arguments, without the program name.
 * @param io Where output goes.
 * @returns The process exit code: 0 ok, 1 runtime failure, 2 usage error.
 *
 * @example Print the version
 * ```ts
 * import { main } from "./cli.ts";
 * if (await main(["version"]) !== 0) throw new Error();
 * ```
 *
 * @example A usage error
 * ```ts
 * import { main } from "./cli.ts";
 * const lines: string[] = [];
 * const code = await main(["init"], { out: () => {}, err: (l) => lines.push(l) });
 * if (code !== 2 || lines.length !== 1) throw new Error(lines.join("\n"));
 * ```
 */
export async function main(args: readonly string[], io: CommandIo = consoleIo): Promise<number> {
  const [cmd = "help", ...rest] = args;
  try {
    switch (cmd) {
      case "version":
      case "--version":
        if (rest.length) throw new UsageError(`Unexpected argument "${rest[0]}"`);
        io.out(VERSION);
        return 0;
      case "help":
      case "--help":
      case "-h": {
        const of = rest[0] ? COMMANDS[rest[0]] : undefined;
        if (rest[0] && !of) throw new UsageError(`Unknown command "${rest[0]}"`);
        io.out(of ? of.help : USAGE);
        return 0;
      }
    }
    const command = COMMANDS[cmd];
    if (!command) throw new UsageError(`Unknown command "${cmd}"`);
    return await command.run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      const help = COMMANDS[cmd] ? `kubeno ${COMMANDS[cmd].name} --help` : "kubeno help";
      // Parser errors name the flag but not the remedy; the others say what to do.
      const msg = /^(Unknown|Flag|Unexpected)/.test(err.message) && !err.message.includes(";")
        ? `${err.message}; run "${help}" for usage`
        : err.message;
      io.err(`kubeno: ${msg}`);
      return 2;
    }
    io.err(`kubeno ${cmd}: ${firstLine(err)}`);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
