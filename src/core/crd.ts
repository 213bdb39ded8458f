/**
 * The parts of a CustomResourceDefinition (apiextensions.k8s.io/v1) as kubeno's own plain
 * types: what `defineResource(...).crd()` fills in and what `install` applies. The object
 * itself, `CustomResourceDefinition`, is in `kinds_cluster.ts` with the other built-in kinds.
 *
 * @module
 */
/** One CEL rule (`x-kubernetes-validations` entry), evaluated by the API server. */
export interface ValidationRule {
  /** The CEL expression; `self` is the value the rule is declared on, e.g. `self.min <= self.max`. */
  rule: string;
  /** Message returned when the rule fails. */
  message?: string;
  /** CEL expression producing the message. */
  messageExpression?: string;
  /** Reason returned when the rule fails. */
  reason?:
    | "FieldValueInvalid"
    | "FieldValueForbidden"
    | "FieldValueRequired"
    | "FieldValueDuplicate";
  /** JSON path (relative to `self`) of the field the failure is reported on, e.g. `.max`. */
  fieldPath?: string;
  /** Whether a transition rule also runs on create, with `oldSelf` an absent optional. */
  optionalOldSelf?: boolean;
}

/**
 * A (structural) OpenAPI v3 schema as the API server reads it: apiextensions.k8s.io/v1
 * `JSONSchemaProps`, the subset kubeno generates.
 */
export interface JSONSchemaProps {
  /** `object`, `array`, `string`, `integer`, `number` or `boolean`. */
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  /** Format the server checks, e.g. `date-time`, `int64`. */
  format?: string;
  /** Short title. */
  title?: string;
  /** What the field means; shown by `kubectl explain` and in the published OpenAPI. */
  description?: string;
  /** Value the server fills in when the field is absent. */
  default?: unknown;
  /** Example value. */
  example?: unknown;
  /** Allowed values. */
  enum?: unknown[];
  /** Whether `null` is allowed. */
  nullable?: boolean;
  /** Smallest allowed number. */
  minimum?: number;
  /** Largest allowed number. */
  maximum?: number;
  /** Whether `minimum` itself is excluded. */
  exclusiveMinimum?: boolean;
  /** Whether `maximum` itself is excluded. */
  exclusiveMaximum?: boolean;
  /** Numbers must be a multiple of this. */
  multipleOf?: number;
  /** Shortest allowed string. */
  minLength?: number;
  /** Longest allowed string. */
  maxLength?: number;
  /** Regular expression (Go RE2 syntax) strings must match. */
  pattern?: string;
  /** Fewest array items. */
  minItems?: number;
  /** Most array items. */
  maxItems?: number;
  /** Fewest object properties. */
  minProperties?: number;
  /** Most object properties. */
  maxProperties?: number;
  /** Names of properties that must be present. */
  required?: string[];
  /** Schema of array items. */
  items?: JSONSchemaProps;
  /** Schemas of known object properties. */
  properties?: Record<string, JSONSchemaProps>;
  /** Schema of the values of a map. */
  additionalProperties?: JSONSchemaProps | boolean;
  /** Value validations that must all pass. */
  allOf?: JSONSchemaProps[];
  /** Value validations of which at least one must pass. */
  anyOf?: JSONSchemaProps[];
  /** Value validations of which exactly one must pass. */
  oneOf?: JSONSchemaProps[];
  /** A value validation that must fail. */
  not?: JSONSchemaProps;
  /** Keep fields the schema does not name instead of pruning them. */
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  /** The value is a whole Kubernetes object (apiVersion, kind, metadata). */
  "x-kubernetes-embedded-resource"?: boolean;
  /** The value is an integer or a string. */
  "x-kubernetes-int-or-string"?: boolean;
  /** How server-side apply merges the list. */
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  /** The keys identifying items of a `map` list. */
  "x-kubernetes-list-map-keys"?: string[];
  /** How server-side apply merges the map. */
  "x-kubernetes-map-type"?: "atomic" | "granular";
  /** CEL rules. */
  "x-kubernetes-validations"?: ValidationRule[];
}

/** An extra column of `kubectl get` (`additionalPrinterColumns`). */
export interface PrinterColumn {
  /** Column header, e.g. `Phase`. */
  name: string;
  /** Value type: `string`, `integer`, `number`, `boolean` or `date` (shown as an age). */
  type: "string" | "integer" | "number" | "boolean" | "date";
  /** Simple JSON path into the object, e.g. `.status.phase`. */
  jsonPath: string;
  /** Column description, shown by `kubectl explain`-style tooling. */
  description?: string;
  /** Display format: `int32`, `int64`, `float`, `double`, `byte`, `date`, `date-time` or `password`. */
  format?: string;
  /**
   * 0 shows the column in the standard view; higher values only with `-o wide`.
   * @default 0
   */
  priority?: number;
}

/** The scale subresource: where replicas live, for `kubectl scale` and autoscalers. */
export interface ScaleSubresource {
  /** JSON path of the desired replicas, e.g. `.spec.replicas`. */
  specReplicasPath: string;
  /** JSON path of the observed replicas, e.g. `.status.replicas`. */
  statusReplicasPath: string;
  /** JSON path of the label selector string, e.g. `.status.selector`. */
  labelSelectorPath?: string;
}

/** One served version of a CRD. */
export interface CustomResourceDefinitionVersion {
  /** Version name, e.g. `v1alpha1`. */
  name: string;
  /** Whether the API server serves this version. */
  served: boolean;
  /** Whether objects are stored in this version; exactly one version stores. */
  storage: boolean;
  /** The version's schema. */
  schema: { openAPIV3Schema: JSONSchemaProps };
  /** Status (`{}` enables `/status`) and scale subresources. */
  subresources?: { status?: Record<string, never>; scale?: ScaleSubresource };
  /** Extra `kubectl get` columns. */
  additionalPrinterColumns?: PrinterColumn[];
  /** Whether the version is deprecated. */
  deprecated?: boolean;
  /** Warning returned to clients of a deprecated version. */
  deprecationWarning?: string;
}

/** Names of a custom resource. */
export interface CustomResourceDefinitionNames {
  /** Lower-case plural used in URLs, e.g. `myapps`. */
  plural: string;
  /** Lower-case singular, e.g. `myapp`. */
  singular: string;
  /** Kind, e.g. `Myapp`. */
  kind: string;
  /** Kind of lists, e.g. `MyappList`. */
  listKind: string;
  /** Short names for kubectl, e.g. `ma`. */
  shortNames?: string[];
  /** Groups for kubectl, e.g. `all`. */
  categories?: string[];
}

/** What a CRD declares. */
export interface CustomResourceDefinitionSpec {
  /** API group, e.g. `apps.kubeno.dev`. */
  group: string;
  /** The resource's names. */
  names: CustomResourceDefinitionNames;
  /** `Namespaced` or `Cluster`. */
  scope: "Namespaced" | "Cluster";
  /** Served versions. */
  versions: CustomResourceDefinitionVersion[];
  /**
   * How objects are converted between versions.
   * @default `{ strategy: "None" }`: only `apiVersion` changes
   */
  conversion?: CustomResourceConversion;
}

/** How the API server converts a custom resource between its versions. */
export interface CustomResourceConversion {
  /** `None` (only `apiVersion` changes) or `Webhook` (a conversion webhook is called). */
  strategy: "None" | "Webhook";
  /** The conversion webhook, with `strategy: "Webhook"`. */
  webhook?: WebhookConversion;
}

/** A CRD's conversion webhook. */
export interface WebhookConversion {
  /** Where the API server sends ConversionReviews. */
  clientConfig?: ConversionWebhookClientConfig;
  /** ConversionReview versions the webhook understands, e.g. `["v1"]`. */
  conversionReviewVersions: string[];
}

/** Where a conversion webhook is reachable: a `url` or a `service`, and the CA to trust. */
export interface ConversionWebhookClientConfig {
  /** `https://host:port/path`, for a webhook outside the cluster. */
  url?: string;
  /** A Service in the cluster. */
  service?: {
    /** The Service's namespace. */
    namespace: string;
    /** The Service's name. */
    name: string;
    /** URL path, e.g. `/convert`. */
    path?: string;
    /** Service port. @default 443 */
    port?: number;
  };
  /** Base64 PEM bundle of the CAs that sign the webhook's serving certificate. */
  caBundle?: string;
}

/** One status condition of a CRD, e.g. `Established`. */
export interface CustomResourceDefinitionCondition {
  /** `Established`, `NamesAccepted`, `NonStructuralSchema`, `Terminating`, ... */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: string;
  /** Machine-readable reason. */
  reason?: string;
  /** Human-readable message. */
  message?: string;
  /** When `status` last changed. */
  lastTransitionTime?: string;
}
