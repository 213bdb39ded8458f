// Finds helm for the chart tests, next to the control-plane binaries: $KUBENO_HELM, then the
// cache folder of the pinned Kubernetes version (where testenv/build_helm.sh puts it), built
// there from the Go module proxy when missing and Go is available. When it cannot be had,
// the reason is returned so that the tests skip visibly instead of passing.
import { findTestenvTool, type ToolBinary } from "./_testenv_tool.ts";

/** Where helm is, or why there is none. */
export type HelmBinary = ToolBinary;

/**
 * Finds (or builds) helm.
 *
 * @returns The path, or the reason it cannot be had.
 */
export function findHelm(): Promise<HelmBinary> {
  return findTestenvTool("helm");
}
