// Locating and building the benchmark's contenders: the Go peers are built with `go build`
// and the kube-rs peer with `cargo build --release --locked` (crates from crates.io) into a
// cache folder outside the repository (keyed by a hash of their sources), the Node.js peer's
// dependencies are installed with `npm ci`, and the kubeno contenders are warmed up once so
// that module loading is not measured as a cold start.

import { DEFAULT_MEMORY_LIMIT, v8FlagsForLimit } from "../src/deploy/manifests.ts";
import { MALLOC_ENV } from "../src/util/memory_limit.ts";

const BENCH = new URL(".", import.meta.url).pathname;
const GO_DIR = `${BENCH}peers/go`;
const RUST_DIR = `${BENCH}peers/rust/kube-operator`;
const NODE_DIR = `${BENCH}peers/node-informer`;

/** How to start one contender: program, arguments, working directory. */
export interface Command {
  cmd: string;
  args: string[];
  cwd?: string;
  /** Added to the harness's environment. */
  env?: Record<string, string>;
}

/** Paths of the built peers. */
export interface Peers {
  crOperator: string;
  limit: string;
  informerSync: string;
  /** The kube-rs operator; undefined where cargo is missing (see `kubeRsSkipped`). */
  kubeOperator?: string;
  /** Why the kube-rs peer is not measured here. */
  kubeRsSkipped?: string;
  nodeDir: string;
}

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) {
    throw new Error(
      `Cannot run "${cmd} ${args.join(" ")}" (exit ${out.code}):\n${
        new TextDecoder().decode(out.stderr).trim().split("\n").slice(-20).join("\n")
      }`,
    );
  }
  return text;
}

async function sourceHash(dir: string, pattern = /\.(go|mod|sum)$/): Promise<string> {
  const parts: string[] = [];
  const walk = async (d: string) => {
    const entries = [...Deno.readDirSync(d)].sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      const p = `${d}/${e.name}`;
      if (e.isDirectory) await walk(p);
      else if (pattern.test(e.name)) {
        parts.push(p.slice(dir.length), await Deno.readTextFile(p));
      }
    }
  };
  await walk(dir);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\0")));
  return [...new Uint8Array(digest)].slice(0, 8).map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * Builds the Go peers (unless already built from the same sources) and installs the
 * Node.js peer's dependencies (unless present).
 *
 * @param progress Where progress lines go.
 * @returns The peers' paths.
 * @throws {Error} When `go build` or `npm ci` fails.
 */
export async function preparePeers(progress: (line: string) => void): Promise<Peers> {
  const home = Deno.env.get("HOME") ?? "/tmp";
  const cache = `${Deno.env.get("XDG_CACHE_HOME") ?? `${home}/.cache`}/kubeno/bench-peers`;
  const out = `${cache}/${await sourceHash(GO_DIR)}`;
  const peers: Peers = {
    crOperator: `${out}/cr-operator`,
    limit: `${out}/limit`,
    informerSync: `${out}/informer-sync`,
    kubeOperator: `${cache}/kube-rs-${await sourceHash(
      RUST_DIR,
      /\.(rs|toml|lock)$/,
    )}/kube-operator`,
    nodeDir: NODE_DIR,
  };
  const built = [peers.crOperator, peers.limit, peers.informerSync].every((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
  if (!built) {
    progress(`building Go peers into ${out} (first build takes a few minutes)`);
    await Deno.mkdir(out, { recursive: true });
    await run("go", ["build", "-trimpath", "-o", `${out}/`, "./..."], GO_DIR);
  }
  const kubeOperator = peers.kubeOperator!;
  if (!isFile(kubeOperator)) {
    const cargo = await run("cargo", ["--version"]).catch(() => undefined);
    if (!cargo) {
      peers.kubeRsSkipped = "cargo is not installed";
      peers.kubeOperator = undefined;
      progress("not measuring the kube-rs peer: cargo is not installed");
    } else {
      progress(`building the kube-rs peer into ${kubeOperator} (first build takes minutes)`);
      // One target folder for every source version, so a rebuild only recompiles what changed.
      const target = `${cache}/rust-target`;
      await Deno.mkdir(kubeOperator.slice(0, kubeOperator.lastIndexOf("/")), { recursive: true });
      await run("cargo", ["build", "--release", "--locked", "--target-dir", target], RUST_DIR);
      await Deno.copyFile(`${target}/release/kube-operator`, kubeOperator);
    }
  }
  await prepareNodePeer(cache, progress);
  return peers;
}

/**
 * The Node.js peer's node_modules: installed once per package-lock.json into the cache (like
 * the Go and Rust builds), then linked into the peer's folder, so a clean clone (CI) does not
 * run `npm ci` again and the checkout holds no node_modules of its own.
 */
async function prepareNodePeer(cache: string, progress: (line: string) => void): Promise<void> {
  const linked = `${NODE_DIR}/node_modules`;
  const probe = "node_modules/@kubernetes/client-node/package.json";
  let present: Deno.FileInfo | undefined;
  try {
    present = Deno.lstatSync(linked);
  } catch { /* absent */ }
  // A node_modules of the peer's own (an older checkout ran `npm ci` there): keep using it.
  if (present && !present.isSymlink && isFile(`${NODE_DIR}/${probe}`)) return;
  const files = ["package.json", "package-lock.json"];
  const lock = files.map((f) => Deno.readTextFileSync(`${NODE_DIR}/${f}`)).join("\0");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(lock));
  const key = [...new Uint8Array(digest)].slice(0, 8).map((b) => b.toString(16).padStart(2, "0"))
    .join("");
  const dir = `${cache}/node-${key}`;
  if (!isFile(`${dir}/${probe}`)) {
    progress(`installing the Node.js peer's dependencies into ${dir} (npm ci)`);
    await Deno.mkdir(dir, { recursive: true });
    for (const f of files) await Deno.copyFile(`${NODE_DIR}/${f}`, `${dir}/${f}`);
    await run("npm", ["ci", "--no-audit", "--no-fund"], dir);
  }
  // A link to another lock file's install, or an unfinished install of the peer's own.
  if (present) await Deno.remove(linked, { recursive: !present.isSymlink });
  await Deno.symlink(`${dir}/node_modules`, linked);
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Runs each kubeno contender once with `KUBENO_BENCH_WARMUP=1` (it exits after loading), so
 * later runs start from Deno's warm module cache like a deployed operator would.
 */
export async function warmUpKubeno(): Promise<void> {
  for (const file of ["kubeno_converge.ts", "kubeno_informer.ts"]) {
    const out = await new Deno.Command("deno", {
      args: ["run", "-A", `${BENCH}${file}`],
      env: { KUBENO_BENCH_WARMUP: "1" },
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`Cannot load ${file}:\n${new TextDecoder().decode(out.stderr).trim()}`);
    }
  }
}

/**
 * The operators: `kubeno` with the manager's default work queue, `kubeno-fifo` with a
 * first-in-first-out one.
 */
export type Operator = "kubeno" | "kubeno-fifo" | "controller-runtime" | "kube-rs";

/**
 * The V8 heap flags an operator runs with as deployed: what the generated Deployment's
 * `DENO_V8_FLAGS` carries for its memory limit (256Mi: old space 144 MiB, semi-spaces 4 MiB
 * instead of V8's 16–32), from the same function. kubeno's operator contenders run with
 * them; the Go and Rust peers run as their Deployments would, with their runtimes' defaults.
 */
export const DEPLOYED_V8_FLAGS: string = v8FlagsForLimit(DEFAULT_MEMORY_LIMIT);

/**
 * The environment the generated Deployment and Dockerfiles give an operator besides its heap
 * flags: glibc's mmap threshold fixed at 1 MiB (`MALLOC_ENV`, src/util/memory_limit.ts).
 * kubeno's operator and informer contenders run with it.
 */
export const DEPLOYED_ENV: Record<string, string> = { [MALLOC_ENV.name]: MALLOC_ENV.value };

/**
 * The converge contenders (operators); `limit` exits its work and waits for SIGTERM.
 * `kubeno-fifo` is kubeno with `createManager({ priorityQueue: false })`.
 */
export function operatorCommand(
  who: Operator,
  peers: Peers,
  kubeconfig: string,
  startsPath?: string,
): Command {
  const starts = startsPath ? ["--starts", startsPath] : [];
  if (who === "kubeno" || who === "kubeno-fifo") {
    return {
      cmd: "deno",
      env: DEPLOYED_ENV,
      args: [
        "run",
        "-A",
        `--v8-flags=${DEPLOYED_V8_FLAGS}`,
        `${BENCH}kubeno_converge.ts`,
        "--kubeconfig",
        kubeconfig,
        "--workers",
        "4",
        ...(who === "kubeno-fifo" ? ["--priority-queue", "false"] : []),
        ...starts,
      ],
    };
  }
  if (who === "kube-rs") {
    if (startsPath) throw new Error("The kube-rs peer does not record reconcile starts");
    if (!peers.kubeOperator) throw new Error(`The kube-rs peer is missing: ${peers.kubeRsSkipped}`);
    return { cmd: peers.kubeOperator, args: ["--kubeconfig", kubeconfig, "--workers", "4"] };
  }
  return {
    cmd: peers.crOperator,
    args: [
      "-kubeconfig",
      kubeconfig,
      "-workers",
      "4",
      ...(startsPath ? ["-starts", startsPath] : []),
    ],
  };
}

/** The limit contender. */
export function limitCommand(peers: Peers, kubeconfig: string, namespace: string): Command {
  return {
    cmd: peers.limit,
    args: ["-kubeconfig", kubeconfig, "-namespace", namespace, "-workers", "4"],
  };
}

/** The informer-sync contenders. */
export function informerCommand(
  who: InformerContender,
  peers: Peers,
  kubeconfig: string,
  namespace: string,
): Command {
  switch (who) {
    case "kubeno":
    case "kubeno-metadata":
      return {
        cmd: "deno",
        env: DEPLOYED_ENV,
        args: [
          "run",
          "-A",
          "--v8-flags=--expose-gc",
          `${BENCH}kubeno_informer.ts`,
          "--kubeconfig",
          kubeconfig,
          "--namespace",
          namespace,
          ...(who === "kubeno-metadata" ? ["--metadata"] : []),
        ],
      };
    case "client-go":
      return {
        cmd: peers.informerSync,
        args: ["-kubeconfig", kubeconfig, "-namespace", namespace],
      };
    case "client-go-json":
    case "client-go-json-list":
      return {
        cmd: peers.informerSync,
        args: ["-kubeconfig", kubeconfig, "-namespace", namespace, "-json"],
        env: who === "client-go-json-list" ? { KUBE_FEATURE_WatchListClient: "false" } : {},
      };
    case "client-node":
      return {
        cmd: "node",
        args: ["--expose-gc", "index.mjs", kubeconfig, namespace],
        cwd: NODE_DIR,
      };
  }
}

/**
 * The informer-sync contenders. `client-go` asks for protobuf, as client-go does by default;
 * `client-go-json` asks for JSON, the encoding kubeno reads (with client-go's default
 * watch-list), and `client-go-json-list` JSON in paged lists, as kubeno syncs.
 */
export type InformerContender =
  | "kubeno"
  | "kubeno-metadata"
  | "client-go"
  | "client-go-json"
  | "client-go-json-list"
  | "client-node";

/**
 * Versions of everything measured, for the report.
 *
 * @returns Tool and library versions.
 */
export async function versions(): Promise<Record<string, string>> {
  const goMod = await Deno.readTextFile(`${GO_DIR}/go.mod`);
  const nodePkg = JSON.parse(
    await Deno.readTextFile(`${NODE_DIR}/node_modules/@kubernetes/client-node/package.json`).catch(
      () => '{"version":"not installed"}',
    ),
  );
  const mod = (name: string) =>
    goMod.match(new RegExp(`${name.replace(/[.]/g, "\\.")} (v\\S+)`))?.[1] ?? "?";
  const cargoLock = await Deno.readTextFile(`${RUST_DIR}/Cargo.lock`).catch(() => "");
  const crate = (name: string) =>
    cargoLock.match(new RegExp(`name = "${name}"\\nversion = "([^"]+)"`))?.[1] ?? "?";
  return {
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    go: (await run("go", ["env", "GOVERSION"])).replace(/^go/, ""),
    node: (await run("node", ["--version"])).replace(/^v/, ""),
    "controller-runtime": mod("sigs.k8s.io/controller-runtime"),
    "client-go": mod("k8s.io/client-go"),
    "client-node": nodePkg.version,
    rust: (await run("rustc", ["--version"]).catch(() => "rustc ?")).split(" ")[1],
    kube: crate("kube"),
    "k8s-openapi": crate("k8s-openapi"),
  };
}
