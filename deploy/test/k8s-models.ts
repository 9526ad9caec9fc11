import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as keda from "@kubernetes-models/keda/keda.sh/v1alpha1";
import * as apps from "kubernetes-models/apps/v1";
import * as autoscaling from "kubernetes-models/autoscaling/v2";
import * as networking from "kubernetes-models/networking.k8s.io/v1";
import * as policy from "kubernetes-models/policy/v1";
import * as core from "kubernetes-models/v1";
import type { K8sObject } from "./kustomize";

interface Model {
  validate(): void;
}
type ModelClass = new (data: never) => Model;

const modules: Record<string, Record<string, unknown>> = {
  v1: core,
  "apps/v1": apps,
  "autoscaling/v2": autoscaling,
  "policy/v1": policy,
  "networking.k8s.io/v1": networking,
  "keda.sh/v1alpha1": keda,
};

/**
 * Validates an object against the Kubernetes (or KEDA) API schema of its apiVersion and kind, with
 * the models of kubernetes-models. Throws naming the object and the first schema errors; an object
 * of a kind we have no model for is an error too, so nothing goes unchecked.
 */
export function validateObject(obj: K8sObject): void {
  const model = modules[obj.apiVersion]?.[obj.kind] as ModelClass | undefined;
  if (typeof model !== "function") throw new Error(`no schema for ${obj.apiVersion} ${obj.kind} (${obj.metadata?.name})`);
  try {
    new model(obj as never).validate();
  } catch (err) {
    throw new Error(`${obj.kind}/${obj.metadata.name} does not match the ${obj.apiVersion} schema: ${(err as Error).message}`);
  }
}

/**
 * The compiled schemas accept fields they do not know (they set no additionalProperties: false), so
 * a misspelt field (`readinesProbe`) would pass validation and be dropped by the API server. Every
 * field name the schemas know is read from their compiled validators; a name outside that set is
 * reported with its path. Maps whose keys are data (labels, ConfigMap data, trigger metadata…) are
 * not field names and are skipped.
 */
export function unknownFields(obj: K8sObject): string[] {
  const found: string[] = [];
  walk(obj, "", found);
  return found;
}

const FREE_FORM_MAPS = new Set(["labels", "annotations", "matchLabels", "data", "stringData", "binaryData", "requests", "limits", "nodeSelector"]);

function walk(value: unknown, path: string, found: string[]): void {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) walk(item, `${path}[${i}]`, found);
    return;
  }
  if (value === null || typeof value !== "object") return;
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (!knownFieldNames().has(key)) found.push(childPath);
    if (isFreeFormMap(key, path)) continue;
    walk(child, childPath, found);
  }
}

function isFreeFormMap(key: string, parentPath: string): boolean {
  if (FREE_FORM_MAPS.has(key)) return true;
  // A Service's selector is a label map; KEDA trigger metadata is the scaler's own settings.
  if (key === "selector" && parentPath === "spec") return true;
  if (key === "metadata" && /\.triggers\[\d+\]$/.test(parentPath)) return true;
  return false;
}

let known: Set<string> | undefined;
function knownFieldNames(): Set<string> {
  if (known) return known;
  known = new Set();
  const require = createRequire(import.meta.url);
  const models = dirname(require.resolve("kubernetes-models/package.json"));
  // Object metadata's schema lives in the models' own dependency, found from where they are.
  const apimachinery = dirname(createRequire(join(models, "index.js")).resolve("@kubernetes-models/apimachinery"));
  for (const pkg of [models, dirname(require.resolve("@kubernetes-models/keda/package.json")), apimachinery]) {
    const dir = join(pkg, "_schemas");
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".mjs"))) {
      const source = readFileSync(join(dir, file), "utf8");
      for (const m of source.matchAll(/data\.([A-Za-z_$][\w$]*)/g)) known.add(m[1] as string);
      for (const m of source.matchAll(/data\["([^"]+)"\]/g)) known.add(m[1] as string);
    }
  }
  if (!known.has("readinessProbe") || !known.has("scaleTargetRef") || !known.has("annotations")) {
    throw new Error("could not read the field names of the kubernetes-models schemas (their layout changed?)");
  }
  return known;
}
