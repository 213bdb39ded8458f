/**
 * `kubeno compile <entry> [-o out]`: `deno compile`s an operator with exactly the permissions
 * an operator needs instead of `-A`, and reports the binary's size.
 *
 * The permissions ({@linkcode operatorPermissions}), each found by running an operator under
 * them against a real API server (`install`, `run` with leader election, reconciles, the
 * webhook server):
 *
 * - `--allow-net`: the API server, and listening for metrics, probes and webhooks. With
 *   `--allow-net-hosts` only those hosts plus the default listen addresses.
 * - `--allow-read`: the in-cluster service-account files (`/var/run/secrets/kubernetes.io`),
 *   kubeconfig files (`~/.kube` and the files in `KUBECONFIG` at compile time, plus
 *   `--allow-read`), the temp dir, where the webhook server keeps its Unix socket, and the
 *   container's memory limit (`/proc/self/cgroup`, `/sys/fs/cgroup`), which `run` compares
 *   the V8 heap with.
 *
 * No `--v8-flags`: flags compiled in come after DENO_V8_FLAGS and win over it (measured on
 * Deno 2.9.6), so a heap size baked into the binary could not follow the Deployment's limit;
 * the generated Deployment sets DENO_V8_FLAGS from its limit instead.
 * - `--allow-write`: the temp dir (that socket).
 * - `--allow-env`: all variables. kubeno reads `KUBECONFIG`, `HOME`, `POD_NAMESPACE`,
 *   `WATCH_NAMESPACE`, `KUBERNETES_SERVICE_HOST`/`PORT` and `HOSTNAME`, but the `debug`
 *   package that `@kubernetes/client-node` loads enumerates the whole environment, which a
 *   list of names does not permit.
 * - `--allow-sys=hostname`: the leader-election identity.
 * - `--allow-run`: nothing by default. A kubeconfig whose user authenticates with an exec
 *   credential plugin (`aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin`) needs it
 *   for that command: `kubeno compile --allow-run=aws`. In a cluster no plugin runs.
 *
 * `deno compile` downloads its runtime (denort) unless `DENORT_BIN` names one; without
 * network access that fails, and this command says so in one line (exit 1).
 *
 * @module
 */
import { basename, dirname, extname, resolve } from "node:path";
import { type FlagSpec, formatFlags, parseFlags, parseList } from "../util/args.ts";
import { type KubenoCommand, UsageError } from "./common.ts";
import { type CommandIo, firstLine } from "../util/cli_io.ts";
import { KubenoError } from "../util/error.ts";

/** The in-cluster service-account directory. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io";

/** Where `run` reads the container's memory limit. */
export const CGROUP_PATHS = ["/proc/self/cgroup", "/sys/fs/cgroup"] as const;

/**
 * Addresses an operator listens on by default: metrics (8443 secure, 8080 plain), probes,
 * webhooks; each on IPv6 (`[::]`, which also accepts IPv4) and on IPv4 alone, where IPv6 is
 * unavailable.
 */
export const DEFAULT_LISTEN = [8443, 8080, 8081, 9443].flatMap((p) => [
  `0.0.0.0:${p}`,
  `[::]:${p}`,
]);

/** Options of {@linkcode operatorPermissions}. */
export interface OperatorPermissionsOptions {
  /**
   * Hosts (`host` or `host:port`) the operator may connect to, e.g. the API server. Empty
   * allows every host.
   * @default []
   */
  netHosts?: readonly string[];
  /**
   * Addresses the operator may listen on; used only with `netHosts`.
   * @default DEFAULT_LISTEN
   */
  listen?: readonly string[];
  /**
   * Kubeconfig files or directories it may read, besides the service-account directory.
   * @default [] (the CLI adds `~/.kube` and the files in `KUBECONFIG`)
   */
  kubeconfigPaths?: readonly string[];
  /**
   * The temp dir, where the webhook server creates its Unix socket.
   * @default "/tmp"
   */
  tmpDir?: string;
  /**
   * Commands it may run: the exec credential plugins its kubeconfigs name. Empty runs none.
   * @default []
   */
  run?: readonly string[];
}

/**
 * The `deno compile` (or `deno run`) permission flags of an operator. The Dockerfile of a
 * project made by `kubeno init` holds this list with its defaults.
 *
 * @param options Hosts, listen addresses, kubeconfig paths, temp dir.
 * @returns The flags, e.g. `["--allow-net", "--allow-read=/var/run/secrets/kubernetes.io,/tmp,...", ...]`.
 *
 * @example The permissions of an operator running in a cluster
 * ```ts
 * import { operatorPermissions } from "./compile.ts";
 * const flags = operatorPermissions();
 * if (flags.includes("-A") || !flags.includes("--allow-sys=hostname")) throw new Error();
 * ```
 *
 * @example Only the API server's host
 * ```ts
 * import { operatorPermissions } from "./compile.ts";
 * const [net] = operatorPermissions({ netHosts: ["10.96.0.1:443"] });
 * if (!net.startsWith("--allow-net=10.96.0.1:443,0.0.0.0:8443,[::]:8443")) throw new Error(net);
 * ```
 */
export function operatorPermissions(options: OperatorPermissionsOptions = {}): string[] {
  const tmp = options.tmpDir ?? "/tmp";
  const hosts = options.netHosts ?? [];
  const net = hosts.length
    ? `--allow-net=${unique([...hosts, ...(options.listen ?? DEFAULT_LISTEN)]).join(",")}`
    : "--allow-net";
  const read = unique([
    SERVICE_ACCOUNT_DIR,
    ...(options.kubeconfigPaths ?? []),
    tmp,
    ...CGROUP_PATHS,
  ]);
  return [
    net,
    `--allow-read=${read.join(",")}`,
    `--allow-write=${tmp}`,
    "--allow-env",
    "--allow-sys=hostname",
    ...(options.run?.length ? [`--allow-run=${unique(options.run).join(",")}`] : []),
  ];
}

/**
 * Kubeconfig paths of this machine: `~/.kube` and the files in `KUBECONFIG`.
 *
 * @returns The paths; empty when the environment is not readable.
 *
 * @example Absolute paths
 * ```ts
 * import { localKubeconfigPaths } from "./compile.ts";
 * if (!localKubeconfigPaths().every((p) => p.startsWith("/"))) throw new Error();
 * ```
 */
export function localKubeconfigPaths(): string[] {
  const env = (name: string) => {
    try {
      return Deno.env.get(name) || undefined;
    } catch {
      return undefined;
    }
  };
  const home = env("HOME");
  const sep = Deno.build.os === "windows" ? ";" : ":";
  const files = (env("KUBECONFIG") ?? "").split(sep).filter(Boolean).map((f) => resolve(f));
  return unique([...(home ? [`${home}/.kube`] : []), ...files]);
}

/** Options of {@linkcode compileOperator}. */
export interface CompileOptions {
  /** The binary to write. @default the entry's name without extension */
  output?: string;
  /** Permission flags. @default operatorPermissions() */
  permissions?: readonly string[];
  /** Further `deno compile` flags, e.g. `--target`. @default [] */
  extraArgs?: readonly string[];
}

/** The outcome of {@linkcode compileOperator}. */
export interface CompileResult {
  /** The path of the binary. */
  output: string;
  /** Its size in bytes. */
  size: number;
}

/** `deno compile` failed; the message is its first error line. */
export class CompileError extends KubenoError {
  override name = "CompileError";
}

/** `deno compile` could not get its runtime (denort): no network and no `DENORT_BIN`. */
export class DenortUnavailableError extends CompileError {
  override name = "DenortUnavailableError";
}

/**
 * Runs `deno compile` with the operator's permissions.
 *
 * @param entry The operator's entry point.
 * @param options Output, permissions, extra flags.
 * @returns The binary's path and size.
 * @throws {DenortUnavailableError} When denort cannot be downloaded and `DENORT_BIN` is unset.
 * @throws {CompileError} When `deno compile` fails otherwise; the message is its first error line.
 *
 * @example Compile an operator
 * ```ts ignore — runs deno compile, which downloads denort (or needs DENORT_BIN)
 * import { compileOperator } from "./compile.ts";
 * const { output, size } = await compileOperator("operator.ts", { output: "bin/op" });
 * console.log(output, size);
 * ```
 */
export async function compileOperator(
  entry: string,
  options: CompileOptions = {},
): Promise<CompileResult> {
  const output = options.output ?? basename(entry, extname(entry));
  await Deno.mkdir(dirname(resolve(output)), { recursive: true });
  const args = [
    "compile",
    ...(options.permissions ?? operatorPermissions()),
    ...(options.extraArgs ?? []),
    "--output",
    output,
    entry,
  ];
  const res = await new Deno.Command(Deno.execPath(), {
    args,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(res.stderr);
  if (res.code !== 0) {
    if (
      /denort|dl\.deno\.land/.test(stderr) && /error sending request|dns error|Connect/.test(stderr)
    ) {
      const url = stderr.match(/https:\/\/dl\.deno\.land\/\S+?\.zip/)?.[0] ?? "dl.deno.land";
      throw new DenortUnavailableError(
        `deno compile could not download its runtime (denort) from ${url}; set DENORT_BIN ` +
          `to a denort binary of Deno ${Deno.version.deno} and retry`,
      );
    }
    const line = stderr.split("\n").find((l) => /error/i.test(l)) ?? firstLine(stderr);
    throw new CompileError(`deno compile failed: ${line.replace(/^error:\s*/i, "").trim()}`);
  }
  const size = (await Deno.stat(output)).size;
  return { output, size };
}

const FLAGS: readonly FlagSpec[] = [
  { name: "output", type: "string", valueName: "PATH", description: "The binary (also -o)" },
  {
    name: "allow-net-hosts",
    type: "string",
    valueName: "HOST[,HOST]",
    description: "Connect only to these hosts (the API server), plus :8443, :8080, :8081, :9443",
  },
  {
    name: "allow-read",
    type: "string",
    valueName: "PATH[,PATH]",
    description: "Further kubeconfig (or certificate) files the binary may read",
  },
  {
    name: "allow-run",
    type: "string",
    valueName: "CMD[,CMD]",
    description: "Exec credential plugins the binary may run (e.g. aws, kubelogin)",
  },
  {
    name: "in-cluster",
    type: "boolean",
    description: "Read only the service-account files, not ~/.kube or KUBECONFIG",
  },
  { name: "target", type: "string", valueName: "TRIPLE", description: "deno compile --target" },
  { name: "dry-run", type: "boolean", description: "Print the deno compile command; run nothing" },
  { name: "help", type: "boolean", description: "Show help" },
];

/** The `compile` command. */
export const compileCommand: KubenoCommand = {
  name: "compile",
  summary: "Compile an operator into one binary with only the permissions it needs",
  help: `Usage: kubeno compile <entry> [-o PATH] [flags]

Runs deno compile on an operator's entry point with the permissions an operator needs,
instead of -A, and reports the binary's size:

  ${operatorPermissions({ kubeconfigPaths: ["~/.kube", "$KUBECONFIG"] }).join("\n  ")}

deno compile downloads its runtime (denort); offline, set DENORT_BIN to a denort binary.

Flags:
${formatFlags(FLAGS)}`,
  async run(args: readonly string[], io: CommandIo): Promise<number> {
    const { flags, positionals } = parseFlags(expandShort(args), FLAGS);
    if (flags.help) {
      io.out(compileCommand.help);
      return 0;
    }
    if (positionals.length !== 1) {
      throw new UsageError(
        positionals.length
          ? `Unexpected argument "${positionals[1]}"; kubeno compile takes one entry point`
          : 'kubeno compile needs an entry point, e.g. "kubeno compile operator.ts -o bin/op"',
      );
    }
    const entry = positionals[0];
    const isFile = await Deno.stat(entry).then((s) => s.isFile, () => false);
    if (!isFile) {
      throw new UsageError(`Entry point "${entry}" is not a file; pass your operator's .ts file`);
    }
    const str = (n: string) => typeof flags[n] === "string" ? flags[n] as string : undefined;
    const permissions = operatorPermissions({
      netHosts: parseList(str("allow-net-hosts")),
      kubeconfigPaths: [
        ...(flags["in-cluster"] ? [] : localKubeconfigPaths()),
        ...parseList(str("allow-read")).map((p) => resolve(p)),
      ],
      run: parseList(str("allow-run")),
    });
    const output = str("output") ?? basename(entry, extname(entry));
    const extraArgs = str("target") ? ["--target", str("target")!] : [];
    if (flags["dry-run"]) {
      io.out(
        ["deno", "compile", ...permissions, ...extraArgs, "--output", output, entry].join(" "),
      );
      return 0;
    }
    try {
      const res = await compileOperator(entry, { output, permissions, extraArgs });
      io.out(
        `Compiled ${entry} to ${res.output} (${formatSize(res.size)}) with ${
          permissions.join(" ")
        }`,
      );
      return 0;
    } catch (err) {
      io.err(`kubeno: ${firstLine(err)}`);
      return 1;
    }
  },
};

/** `-o x` → `--output x`, since the flag parser knows only long flags. */
function expandShort(args: readonly string[]): string[] {
  return args.map((a) =>
    a === "-o" ? "--output" : a.startsWith("-o=") ? `--output=${a.slice(3)}` : a
  );
}

function formatSize(bytes: number): string {
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  return bytes >= 1 << 10 ? `${(bytes / (1 << 10)).toFixed(1)} KiB` : `${bytes} B`;
}

function unique(xs: readonly string[]): string[] {
  return [...new Set(xs)];
}
