// Finds the control-plane binaries the way controller-runtime's envtest does, and builds
// them from the Go module proxy when they are missing and Go is available.
//
// Order per binary: TEST_ASSET_<NAME> (e.g. TEST_ASSET_KUBE_APISERVER), then
// $KUBEBUILDER_ASSETS/<name>, then kubeno's cache ($KUBENO_ASSETS_DIR or
// ~/.cache/kubeno/k8s-<version>).

/** The Kubernetes version kubeno's test control plane is pinned to. */
export const KUBERNETES_VERSION = "v1.37.2";

/** Binaries the control plane can run. */
export type AssetName =
  | "etcd"
  | "kube-apiserver"
  | "kube-controller-manager"
  | "kube-scheduler"
  | "kubectl"
  | "kwok";

/** Thrown when the binaries cannot be found or built. */
export class AssetsError extends KubenoError {
  /** `"AssetsError"`. */
  override name = "AssetsError";
}

/** kubeno's own cache folder for the pinned version. */
export function cacheDir(): string {
  const env = Deno.env.get("KUBENO_ASSETS_DIR");
  if (env) return env;
  const base = Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME") ?? "/tmp"}/.cache`;
  return `${base}/kubeno/k8s-${KUBERNETES_VERSION}`;
}

function envName(name: AssetName): string {
  return `TEST_ASSET_${name.toUpperCase().replaceAll("-", "_")}`;
}

/** Whether `path` is an executable regular file. */
export function isExecutable(path: string): boolean {
  try {
    const st = Deno.statSync(path);
    return st.isFile && ((st.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** Where a binary would be found, or undefined. */
export function findAsset(name: AssetName): string | undefined {
  const explicit = Deno.env.get(envName(name));
  if (explicit) return explicit;
  const dirs = [Deno.env.get("KUBEBUILDER_ASSETS"), cacheDir()].filter((d): d is string => !!d);
  for (const d of dirs) {
    if (isExecutable(`${d}/${name}`)) return `${d}/${name}`;
  }
  return undefined;
}

/** Path of kwok's Stage configuration (built with kwok), or undefined. */
export function kwokStages(): string | undefined {
  const p = `${cacheDir()}/kwok-stages.yaml`;
  try {
    Deno.statSync(p);
    return p;
  } catch {
    return undefined;
  }
}

let building: Promise<void> | undefined;

/**
 * Resolves every named binary, building the cache first when one is missing.
 *
 * @throws {AssetsError} With one line naming both remedies when neither binaries nor Go exist.
 */
import { KubenoError } from "../util/error.ts";
export async function resolveAssets(
  names: AssetName[],
  progress: (line: string) => void,
): Promise<Record<AssetName, string>> {
  const missing = names.filter((n) => !findAsset(n));
  if (missing.length) {
    building ??= build(missing, progress).finally(() => (building = undefined));
    await building;
  }
  const out = {} as Record<AssetName, string>;
  for (const n of names) {
    const p = findAsset(n);
    if (!p) {
      throw new AssetsError(
        `Cannot find control-plane binary "${n}" after building; looked in ${
          envName(n)
        }, KUBEBUILDER_ASSETS and "${cacheDir()}"`,
      );
    }
    out[n] = p;
  }
  return out;
}

async function hasGo(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("go", {
      args: ["version"],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return success;
  } catch {
    return false;
  }
}

async function build(missing: AssetName[], progress: (line: string) => void): Promise<void> {
  if (!(await hasGo())) {
    throw new AssetsError(
      `Cannot start the test control plane: missing ${
        missing.join(", ")
      }; set KUBEBUILDER_ASSETS to a folder of setup-envtest binaries (or TEST_ASSET_<NAME> per binary), or install Go so kubeno can build them`,
    );
  }
  progress(
    `kubeno: building the Kubernetes ${KUBERNETES_VERSION} control plane once (missing ${
      missing.join(", ")
    }); later runs use the cache in ${cacheDir()}`,
  );
  const script = await buildScript();
  const child = new Deno.Command("bash", {
    args: [script],
    stdout: "piped",
    stderr: "piped",
    env: { KUBENO_ASSETS_DIR: cacheDir() },
  }).spawn();
  const pump = async (s: ReadableStream<Uint8Array>) => {
    let buf = "";
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) {
      buf += chunk;
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const l of lines) if (l.startsWith("kubeno") || /error|cannot/i.test(l)) progress(l);
    }
  };
  const [status] = await Promise.all([child.status, pump(child.stdout), pump(child.stderr)]);
  if (!status.success) {
    throw new AssetsError(
      `Cannot build the control-plane binaries: "bash ${script}" exited with ${status.code}; run it by hand to see the Go errors`,
    );
  }
}

/** The wrapper modules and build script, as shipped beside this module. */
const TESTENV_FILES = [
  "build.sh",
  "kubernetes/go.mod",
  "kubernetes/go.sum",
  "etcd/go.mod",
  "etcd/go.sum",
  "kwok/go.mod",
  "kwok/go.sum",
];

/**
 * The path of `testenv/build.sh`. From a checkout it is used in place; when kubeno was
 * imported from a registry (JSR), the script and its Go wrapper modules are downloaded next
 * to the cache first, so users with Go need nothing else.
 */
async function buildScript(): Promise<string> {
  const base = new URL("../../testenv/", import.meta.url);
  if (base.protocol === "file:") return new URL("build.sh", base).pathname;
  const dir = `${cacheDir()}.testenv`;
  for (const f of TESTENV_FILES) {
    const res = await fetch(new URL(f, base));
    if (!res.ok) {
      throw new AssetsError(`Cannot download "${new URL(f, base)}": HTTP ${res.status}`);
    }
    await Deno.mkdir(`${dir}/${f.split("/").slice(0, -1).join("/")}`, { recursive: true });
    await Deno.writeTextFile(`${dir}/${f}`, await res.text());
  }
  return `${dir}/build.sh`;
}
