/**
 * The CustomResourceDefinition object (apiextensions.k8s.io/v1) as kubeno's own plain types:
 * what `defineResource(...).crd()` returns and what `install` applies.
 *
 * @module
 */
import type { ObjectMeta } from "./object.ts";
import type { JSONSchemaProps } from "./schema.ts";

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

/** A CustomResourceDefinition (apiextensions.k8s.io/v1). */
export interface CustomResourceDefinition {
  /** Always `apiextensions.k8s.io/v1`. */
  apiVersion: "apiextensions.k8s.io/v1";
  /** Always `CustomResourceDefinition`. */
  kind: "CustomResourceDefinition";
  /** Metadata; the name is `<plural>.<group>`. */
  metadata: ObjectMeta & { name: string };
  /** The definition. */
  spec: CustomResourceDefinitionSpec;
  /** Set by the server: conditions and accepted names. */
  status?: {
    conditions?: CustomResourceDefinitionCondition[];
    acceptedNames?: CustomResourceDefinitionNames;
  };
}
