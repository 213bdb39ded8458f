// Finds helm for the chart tests, next to the control-plane binaries: $KUBENO_HELM, then the
// cache folder of the pinned Kubernetes version (where testenv/build_helm.sh puts it), built
// there from the Go module proxy when missing and Go is available. When it cannot be had,
// the reason is returned so that the tests skip visibly instead of passing.
import { cacheDir } from "../src/testing/assets.ts";

/** Where helm is, or why there is none. */
export type HelmBinary = { path: string; reason?: undefined } | {
  path?: undefined;
  reason: string;
};

const SCRIPT = new URL("../testenv/build_helm.sh", import.meta.url).pathname;

function executable(path: string): boolean {
  try {
    const st = Deno.statSync(path);
    return st.isFile && ((st.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/**
 * Finds (or builds) helm.
 *
 * @returns The path, or the reason it cannot be had.
 */
export async function findHelm(): Promise<HelmBinary> {
  const explicit = Deno.env.get("KUBENO_HELM");
  if (explicit) {
    return executable(explicit)
      ? { path: explicit }
      : { reason: `KUBENO_HELM="${explicit}" is not an executable file` };
  }
  const cached = `${cacheDir()}/helm`;
  // The script is a no-op when the cache is warm and up to date.
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("bash", {
      args: [SCRIPT],
      env: { KUBENO_ASSETS_DIR: cacheDir() },
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (err) {
    return executable(cached)
      ? { path: cached }
      : { reason: `cannot run testenv/build_helm.sh: ${(err as Error).message}` };
  }
  if (out.success && executable(cached)) return { path: cached };
  if (executable(cached)) return { path: cached };
  const why = new TextDecoder().decode(out.stderr).trim().split("\n").filter(Boolean).at(-1);
  return { reason: `helm cannot be built (testenv/build_helm.sh exited ${out.code}: ${why})` };
}
