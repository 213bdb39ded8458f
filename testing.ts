/**
 * Test support for kubeno operators: a real Kubernetes control plane on loopback, started
 * per test file, in the manner of controller-runtime's envtest.
 *
 * @example Start a control plane for a test
 * ```ts ignore
 * import { startControlPlane } from "@kubeno/kubeno/testing";
 *
 * Deno.test("my operator", async () => {
 *   await using cp = await startControlPlane({ workloads: true });
 *   // point your client at cp.kubeconfigPath
 * });
 * ```
 *
 * @module
 */
export {
  ControlPlane,
  ControlPlaneError,
  type ControlPlaneOptions,
  type KubectlResult,
  startControlPlane,
} from "./src/testing/control_plane.ts";
export { type AssetName, AssetsError, KUBERNETES_VERSION } from "./src/testing/assets.ts";
export { FakeClock } from "./src/testing/fake_clock.ts";
export { FaultProxy, type FaultProxyOptions, startFaultProxy } from "./src/testing/fault_proxy.ts";
