// Finds a tool that a testenv script builds next to the control-plane binaries (helm, Jaeger):
// $KUBENO_<NAME>, then the cache folder of the pinned Kubernetes version, where
// testenv/build_<name>.sh puts it, built there from the Go module proxy when missing and Go is
// available. When it cannot be had, the reason is returned so that the tests skip visibly
// instead of passing.
import { cacheDir, isExecutable } from "../src/testing/assets.ts";

/** Where a tool is, or why there is none. */
export type ToolBinary = { path: string; reason?: undefined } | {
  path?: undefined;
  reason: string;
};

/**
 * Finds (or builds) the tool `name` with testenv/build_<name>.sh.
 *
 * @param name The binary's name in the cache folder, e.g. `helm`.
 * @returns The path, or the reason it cannot be had.
 */
export async function findTestenvTool(name: string): Promise<ToolBinary> {
  const variable = `KUBENO_${name.toUpperCase()}`;
  const explicit = Deno.env.get(variable);
  if (explicit) {
    return isExecutable(explicit)
      ? { path: explicit }
      : { reason: `${variable}="${explicit}" is not an executable file` };
  }
  const script = `testenv/build_${name}.sh`;
  const cached = `${cacheDir()}/${name}`;
  // The script is a no-op when the cache is warm and up to date.
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("bash", {
      args: [new URL(`../${script}`, import.meta.url).pathname],
      env: { KUBENO_ASSETS_DIR: cacheDir() },
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (err) {
    return isExecutable(cached)
      ? { path: cached }
      : { reason: `cannot run ${script}: ${(err as Error).message}` };
  }
  if (isExecutable(cached)) return { path: cached };
  const why = new TextDecoder().decode(out.stderr).trim().split("\n").filter(Boolean).at(-1);
  return { reason: `${name} cannot be built (${script} exited ${out.code}: ${why})` };
}
