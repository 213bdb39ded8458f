/**
 * kubeno's own command line (`cli.ts`): reads the command name and dispatches to one
 * {@linkcode KubenoCommand} per file (`init.ts`, `create.ts`, `compile.ts`); `version` and
 * `help` are answered here. Every failure becomes an exit code and one line on stderr.
 *
 * @module
 */
import denoJson from "../../deno.json" with { type: "json" };
import type { KubenoCommand } from "./common.ts";
import { type CommandIo, consoleIo, firstLine } from "../util/cli_io.ts";
import { UsageError } from "../util/args.ts";
import { compileCommand } from "./compile.ts";
import { createCommand } from "./create.ts";
import { importCommand } from "./import.ts";
import { initCommand } from "./init.ts";

/** kubeno's version, from `deno.json`. */
export const VERSION: string = denoJson.version;

const COMMANDS: Record<string, KubenoCommand> = {
  init: initCommand,
  create: createCommand,
  compile: compileCommand,
  import: importCommand,
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
 * import { main } from "./main.ts";
 * if (await main(["version"]) !== 0) throw new Error();
 * ```
 *
 * @example A usage error
 * ```ts
 * import { main } from "./main.ts";
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
