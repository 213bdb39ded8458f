/**
 * The cluster objects that route admission to the operator: a
 * `ValidatingWebhookConfiguration` and a `MutatingWebhookConfiguration` (one each, named
 * after the operator, with one entry per webhook) and the Service in front of the webhook
 * server. In a cluster the configurations point at the Service; for local runs and tests
 * they point at a URL on loopback, as envtest does. `OperatorWebhook` is what the operator's
 * manifest generator reads of any webhook (an `Admission` has its shape).
 *
 * @module
 */
import type {
  MutatingWebhookConfiguration,
  PolicyRule,
  ValidatingWebhookConfiguration,
  Webhook,
} from "../core/kinds_cluster.ts";
import type { LabelSelector, Service } from "../core/kinds.ts";
import type { KubeObject } from "../core/object.ts";
import type { Resource } from "../core/resource.ts";

/** What the generators need of an admission (an `Admission` from `admission()` has it). */
export interface WebhookSpec {
  /** The resource admitted. */
  readonly resource: Resource;
  /** The mutating webhook, if any. */
  readonly mutating?: { name: string; path: string; operations: readonly string[] };
  /** The validating webhook, if any. */
  readonly validating?: { name: string; path: string; operations: readonly string[] };
  /** `Fail` or `Ignore`. */
  readonly failurePolicy: string;
  /** Seconds the API server waits. */
  readonly timeoutSeconds: number;
  /** `None` or `NoneOnDryRun`. */
  readonly sideEffects: string;
  /** Namespace selector. */
  readonly namespaceSelector?: LabelSelector;
  /** Object selector. */
  readonly objectSelector?: LabelSelector;
}

/** Where the API server sends admission requests. */
export type WebhookTarget =
  | {
    /** In a cluster: the Service in front of the webhook server. */
    service: {
      namespace: string;
      name: string;
      /** @default 443 */
      port?: number;
    };
    url?: never;
  }
  | {
    /** Outside a cluster: the server's base URL, e.g. `https://127.0.0.1:9443`. */
    url: string;
    service?: never;
  };

/** Where the operator's webhook server is reachable from the API server. */
export interface WebhookManifestContext {
  /** The operator's name. */
  operatorName: string;
  /** The namespace the operator runs in. */
  namespace: string;
  /** Name of the Service in front of the webhook server. */
  serviceName: string;
  /** Port of that Service. */
  servicePort: number;
  /** Port the webhook server listens on in the operator's pod. */
  containerPort: number;
}

/**
 * An admission webhook served by the operator, as the manifest generator sees it. It
 * contributes its entries of the cluster's webhook configurations and any extra permissions
 * its server needs; `operator()` adds the Service in front of the webhook server and the
 * container port.
 */
export interface OperatorWebhook {
  /**
   * The objects this webhook needs in the cluster, e.g. a `ValidatingWebhookConfiguration`
   * pointing at `ctx.serviceName`. Configurations with the same kind and name contributed
   * by several webhooks are merged (their `webhooks` lists concatenated).
   * @param ctx Where the webhook server is reachable.
   * @returns Cluster objects.
   */
  manifests(ctx: WebhookManifestContext): KubeObject[];
  /** Extra RBAC rules the webhook server needs in the operator's namespace (e.g. Secrets). */
  readonly rules?: readonly PolicyRule[];
}

/** Options of {@linkcode webhookConfigurations}. */
export interface WebhookConfigurationOptions {
  /** Name of both configurations, usually the operator's name. */
  name: string;
  /** Where the webhook server is reachable. */
  target: WebhookTarget;
  /** PEM CA bundle the API server should trust; absent until the operator patches it in. */
  caBundle?: string;
  /** Labels for both configurations. */
  labels?: Record<string, string>;
}

/** The configurations of {@linkcode webhookConfigurations}; absent when no webhook needs one. */
export interface WebhookConfigurations {
  /** One entry per validating webhook. */
  validating?: ValidatingWebhookConfiguration;
  /** One entry per mutating webhook. */
  mutating?: MutatingWebhookConfiguration;
}

/**
 * Builds the admission configurations for `webhooks`.
 *
 * @param webhooks The admissions.
 * @param options Name, target (Service or URL), CA bundle, labels.
 * @returns The validating and mutating configurations (each only when needed).
 * @throws {TypeError} When a URL target is not `https://`.
 *
 * @example A URL-based configuration for a local run
 * ```ts
 * import { admission } from "./admission.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 * import { webhookConfigurations } from "./manifests.ts";
 * const w = admission(ConfigMap, { validate: () => undefined });
 * const { validating, mutating } = webhookConfigurations([w], {
 *   name: "demo-operator",
 *   target: { url: "https://127.0.0.1:9443" },
 * });
 * const url = validating?.webhooks?.[0].clientConfig.url;
 * if (url !== "https://127.0.0.1:9443/validate--v1-configmap" || mutating) throw new Error();
 * ```
 */
export function webhookConfigurations(
  webhooks: readonly WebhookSpec[],
  options: WebhookConfigurationOptions,
): WebhookConfigurations {
  const { target } = options;
  if (target.url !== undefined && !target.url.startsWith("https://")) {
    throw new TypeError(`Cannot register webhooks at "${target.url}": the URL must be https://`);
  }
  const caBundle = options.caBundle ? btoa(options.caBundle) : undefined;
  const clientConfig = (path: string): Webhook["clientConfig"] => ({
    ...(target.url !== undefined ? { url: `${target.url.replace(/\/+$/, "")}${path}` } : {
      service: {
        namespace: target.service.namespace,
        name: target.service.name,
        path,
        port: target.service.port ?? 443,
      },
    }),
    ...(caBundle ? { caBundle } : {}),
  });
  const entry = (w: WebhookSpec, ep: NonNullable<WebhookSpec["mutating"]>): Webhook => ({
    name: ep.name,
    clientConfig: clientConfig(ep.path),
    rules: [{
      operations: [...ep.operations],
      apiGroups: [w.resource.group],
      apiVersions: [w.resource.version],
      resources: [w.resource.plural],
      scope: w.resource.namespaced ? "Namespaced" : "Cluster",
    }],
    admissionReviewVersions: ["v1"],
    sideEffects: w.sideEffects,
    failurePolicy: w.failurePolicy,
    matchPolicy: "Equivalent",
    timeoutSeconds: w.timeoutSeconds,
    ...(w.namespaceSelector ? { namespaceSelector: structuredClone(w.namespaceSelector) } : {}),
    ...(w.objectSelector ? { objectSelector: structuredClone(w.objectSelector) } : {}),
  });
  const metadata = () => ({
    name: options.name,
    ...(options.labels ? { labels: { ...options.labels } } : {}),
  });
  const validating = webhooks.filter((w) => w.validating).map((w) => entry(w, w.validating!));
  const mutating = webhooks.filter((w) => w.mutating).map((w) => ({
    ...entry(w, w.mutating!),
    reinvocationPolicy: "Never" as const,
  }));
  return {
    ...(validating.length
      ? {
        validating: {
          apiVersion: "admissionregistration.k8s.io/v1",
          kind: "ValidatingWebhookConfiguration",
          metadata: metadata(),
          webhooks: validating,
        },
      }
      : {}),
    ...(mutating.length
      ? {
        mutating: {
          apiVersion: "admissionregistration.k8s.io/v1",
          kind: "MutatingWebhookConfiguration",
          metadata: metadata(),
          webhooks: mutating,
        },
      }
      : {}),
  };
}

/** Options of {@linkcode webhookService}. */
export interface WebhookServiceOptions {
  /** Service name. */
  name: string;
  /** The operator's namespace. */
  namespace: string;
  /** Labels selecting the operator's pods. */
  selector: Record<string, string>;
  /**
   * Port the Service exposes (the configurations' `service.port`).
   * @default 443
   */
  port?: number;
  /**
   * The webhook server's port in the pod (`--webhook-port`).
   * @default 9443
   */
  targetPort?: number | string;
}

/**
 * Builds the Service in front of the operator's webhook server.
 *
 * @param options Name, namespace, pod selector and ports.
 * @returns The Service.
 *
 * @example
 * ```ts
 * import { webhookService } from "./manifests.ts";
 * const svc = webhookService({
 *   name: "demo-webhook",
 *   namespace: "demo-system",
 *   selector: { "app.kubernetes.io/name": "demo" },
 * });
 * if (svc.spec?.ports?.[0].targetPort !== 9443) throw new Error();
 * ```
 */
export function webhookService(options: WebhookServiceOptions): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: options.name, namespace: options.namespace },
    spec: {
      selector: { ...options.selector },
      ports: [{
        name: "webhook",
        port: options.port ?? 443,
        targetPort: options.targetPort ?? 9443,
        protocol: "TCP",
      }],
    },
  };
}

/** Options of {@linkcode webhookManifests}. */
export interface WebhookManifestsOptions {
  /** The operator's name: names the configurations. */
  name: string;
  /** The operator's namespace. */
  namespace: string;
  /**
   * Name of the Service.
   * @default `<name>-webhook`
   */
  serviceName?: string;
  /**
   * Labels selecting the operator's pods.
   * @default `{ "app.kubernetes.io/name": name }`
   */
  selector?: Record<string, string>;
  /**
   * The webhook server's port in the pod.
   * @default 9443
   */
  port?: number;
  /** PEM CA bundle (supplied certificates); self-managed ones are patched in at start-up. */
  caBundle?: string;
}

/**
 * Everything `manifests`/`install` writes for the webhooks: the Service and the
 * configurations pointing at it.
 *
 * @param webhooks The admissions.
 * @param options Operator name, namespace, Service name, port, CA bundle.
 * @returns `[Service, ValidatingWebhookConfiguration?, MutatingWebhookConfiguration?]`, or
 * `[]` without webhooks.
 *
 * @example
 * ```ts
 * import { admission } from "./admission.ts";
 * import { ConfigMap } from "../core/kinds.ts";
 * import { webhookManifests } from "./manifests.ts";
 * const objs = webhookManifests([admission(ConfigMap, { default: () => {} })], {
 *   name: "demo",
 *   namespace: "demo-system",
 * });
 * if (objs.map((o) => o.kind).join() !== "Service,MutatingWebhookConfiguration") throw new Error();
 * ```
 */
export function webhookManifests(
  webhooks: readonly WebhookSpec[],
  options: WebhookManifestsOptions,
): KubeObject[] {
  if (!webhooks.length) return [];
  const serviceName = options.serviceName ?? `${options.name}-webhook`;
  const { validating, mutating } = webhookConfigurations(webhooks, {
    name: options.name,
    target: { service: { namespace: options.namespace, name: serviceName, port: 443 } },
    caBundle: options.caBundle,
    labels: { "app.kubernetes.io/name": options.name, "app.kubernetes.io/managed-by": "kubeno" },
  });
  return [
    webhookService({
      name: serviceName,
      namespace: options.namespace,
      selector: options.selector ?? { "app.kubernetes.io/name": options.name },
      targetPort: options.port ?? 9443,
    }),
    ...(validating ? [validating] : []),
    ...(mutating ? [mutating] : []),
  ];
}
