/**
 * Test support for kubeno operators: a real Kubernetes control plane on loopback, started
 * per test file, in the manner of controller-runtime's envtest; a TCP proxy that injects
 * faults between a client and the API server; an HTTP proxy that delays chosen watch streams,
 * to make cache lag deterministic; a fake clock for timing-heavy code; and an
 * X.509 issuer for the certificates webhook tests need.
 *
 * @example A fake clock drives timers without waiting
 * ```ts
 * import { FakeClock } from "./testing.ts";
 *
 * const clock = new FakeClock();
 * let fired = false;
 * clock.setTimeout(() => fired = true, 5_000);
 * clock.tick(5_000);
 * if (!fired) throw new Error();
 * ```
 *
 * @example Start a control plane for a test
 * ```ts ignore — starts etcd and kube-apiserver; tests/control_plane_test.ts runs exactly this
 * import { startControlPlane } from "./testing.ts";
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
  type StaticToken,
} from "./src/testing/control_plane.ts";
export { ProcessError } from "./src/testing/process.ts";
export { type AssetName, AssetsError, KUBERNETES_VERSION } from "./src/testing/assets.ts";
export { FakeClock } from "./src/testing/fake_clock.ts";
export { type Clock, type TimerId } from "./src/util/clock.ts";
export { FaultProxy, type FaultProxyOptions, startFaultProxy } from "./src/testing/fault_proxy.ts";
export {
  type LagMatch,
  LagProxy,
  type LagProxyOptions,
  type LagProxyStats,
  startLagProxy,
} from "./src/testing/lag_proxy.ts";
export {
  type CertRequest,
  createCa,
  issueCert,
  type IssuedCert,
  type KeyPair,
} from "./src/util/x509.ts";
