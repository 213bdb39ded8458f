/**
 * Admission webhooks: handlers written with {@linkcode admission}, the HTTPS server that
 * serves them, certificates (self-managed in a Secret, or read from a directory and
 * reloaded), the webhook configurations and Service they are registered with, and the
 * AdmissionReview wire types; and the conversion webhook of multi-version resources
 * (`defineResource({ versions })`): its handler at `/convert`, the ConversionReview wire types
 * and the CRDs' `spec.conversion` client configuration.
 *
 * The root entry point re-exports `admission` and `AdmissionDenied`; `operator(...)` runs all
 * of this for you. Use this module to serve webhooks without the operator program.
 *
 * @example Serve a validating webhook over TLS and call it
 * ```ts
 * import { admission, startWebhookServer } from "./webhook.ts";
 * import { ConfigMap } from "./core.ts";
 * import { createCa, issueCert } from "./testing.ts";
 *
 * const ca = await createCa("example-ca");
 * const certificate = await issueCert({ commonName: "webhook", ipAddresses: ["127.0.0.1"], server: true }, ca);
 * await using server = await startWebhookServer({
 *   webhooks: [admission(ConfigMap, { validate: () => "no ConfigMaps today" })],
 *   certificate,
 *   hostname: "127.0.0.1",
 *   port: 0,
 * });
 * using client = Deno.createHttpClient({ caCerts: [ca.certPem] });
 * const res = await fetch(`https://127.0.0.1:${server.port}/validate--v1-configmap`, {
 *   method: "POST",
 *   client,
 *   body: JSON.stringify({
 *     apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
 *     request: {
 *       uid: "1", operation: "CREATE", userInfo: {},
 *       kind: { group: "", version: "v1", kind: "ConfigMap" },
 *       resource: { group: "", version: "v1", resource: "configmaps" },
 *       object: { metadata: { name: "a" } },
 *     },
 *   }),
 * });
 * const review = await res.json();
 * if (review.response.allowed !== false) throw new Error();
 * ```
 *
 * @module
 */
export {
  type Admission,
  admission,
  type AdmissionContext,
  type AdmissionContextBase,
  AdmissionDenied,
  type AdmissionDeniedOptions,
  type AdmissionOptions,
  type ValidatedOperation,
  type ValidationResult,
  type WebhookEndpoint,
} from "./src/webhook/admission.ts";
export {
  field,
  fieldCause,
  type FieldError,
  type FieldErrorType,
  invalidStatus,
  reasonForCode,
  type StatusCause,
} from "./src/webhook/field_error.ts";
export type {
  AdmissionOperation,
  AdmissionRequest,
  AdmissionResponse,
  AdmissionReview,
  GroupVersionKind,
  UserInfo,
} from "./src/webhook/admission_review.ts";
export {
  CONVERSION_PATH,
  conversionHandler,
  type ConversionHandlerOptions,
  type ConversionRequest,
  type ConversionResponse,
  type ConversionReview,
  type ConvertibleResource,
  DEFAULT_MAX_CONVERSION_BYTES,
  parseConversionReview,
  type ParsedConversionReview,
} from "./src/webhook/conversion.ts";
export {
  conversionClientConfig,
  type LocalConversionRegistration,
  patchConversionWebhooks,
  type PatchConversionWebhooksOptions,
  restoreConversions,
  takeOverConversions,
  type TakeOverConversionsOptions,
  usesConversionWebhook,
  withConversionWebhook,
} from "./src/webhook/conversion_config.ts";
export type { LocalRegistration, TakeOverResult } from "./src/webhook/local_registration.ts";
export {
  type RunningWebhooks,
  serveWebhooks,
  type ServeWebhooksOptions,
} from "./src/webhook/webhooks.ts";
export {
  startWebhookServer,
  type TlsCertificate,
  type WebhookServer,
  type WebhookServerOptions,
} from "./src/webhook/server.ts";
export {
  type CertificateSource,
  type SelfManagedCertificates,
  selfManagedCertificates,
  type SelfManagedCertificatesOptions,
  type WebhookCertificate,
  WebhookCertificatesError,
} from "./src/webhook/self_managed_certs.ts";
export {
  type CertificateDir,
  type CertificateDirOptions,
  readCertificateDir,
  watchCertificateDir,
} from "./src/webhook/cert_dir.ts";
export {
  type WebhookConfigurationOptions,
  type WebhookConfigurations,
  webhookConfigurations,
  webhookManifests,
  type WebhookManifestsOptions,
  webhookService,
  type WebhookServiceOptions,
  type WebhookSpec,
  type WebhookTarget,
} from "./src/webhook/manifests.ts";
export {
  registerWebhooks,
  type RegisterWebhooksOptions,
  unregisterWebhooks,
} from "./src/webhook/register.ts";
export { admissionHandler, type AdmissionHandlerOptions } from "./src/webhook/handler.ts";
