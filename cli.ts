/**
 * kubeno's own command line. For now it reports its version and usage; project scaffolding
 * (`init`, `create resource`, `compile`) is tracked in the CLI issue.
 *
 * ```sh
 * deno run -A jsr:@kubeno/kubeno/cli version
 * ```
 *
 * @module
 */
import denoJson from "./deno.json" with { type: "json" };

/** kubeno's version, from `deno.json`. */
export const VERSION: string = denoJson.version;

const USAGE = `kubeno ${VERSION} — write Kubernetes operators in TypeScript on Deno

Usage: kubeno <command>

Commands:
  version   Print kubeno's version
  help      Show this help
`;

/**
 * Runs the CLI with the given arguments.
 *
 * @param args Command-line arguments, without the program name.
 * @returns The process exit code: 0 ok, 2 usage error.
 *
 * @example Print the version
 * ```ts
 * import { main } from "./cli.ts";
 * if (main(["version"]) !== 0) throw new Error();
 * ```
 */
export function main(args: string[]): number {
  const [cmd = "help", ...rest] = args;
  if (rest.length) {
    console.error(`kubeno: unexpected argument "${rest[0]}"; run "kubeno help" for usage`);
    return 2;
  }
  switch (cmd) {
    case "version":
    case "--version":
      console.log(VERSION);
      return 0;
    case "help":
    case "--help":
    case "-h":
      console.log(USAGE);
      return 0;
    default:
      console.error(`kubeno: unknown command "${cmd}"; run "kubeno help" for usage`);
      return 2;
  }
}

if (import.meta.main) Deno.exit(main(Deno.args));
