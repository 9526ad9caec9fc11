import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

export const deployDir = fileURLToPath(new URL("..", import.meta.url));
export const repoDir = join(deployDir, "..");

/** A rendered Kubernetes object, as plain data. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

const MIN_KUSTOMIZE_MAJOR = 5;

/**
 * Renders a kustomization with `kubectl kustomize` (offline: no cluster is asked). .ci/run makes sure
 * kubectl is there; without it this fails with a message saying how to get it, never skips.
 */
export function kustomize(dir: string): K8sObject[] {
  checkKubectl();
  let out: string;
  try {
    out = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(`kubectl kustomize ${dir} failed:\n${stderr}`);
  }
  return parseAllDocuments(out).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]?.message}`);
    return doc.toJS() as K8sObject;
  });
}

let checked = false;
function checkKubectl(): void {
  if (checked) return;
  let version: { kustomizeVersion?: string };
  try {
    version = JSON.parse(execFileSync("kubectl", ["version", "--client", "--output=json"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })) as {
      kustomizeVersion?: string;
    };
  } catch (err) {
    throw new Error(
      `kubectl is needed to render deploy/k8s (${(err as Error).message}). .ci/run installs it; ` +
        "locally: apt-get install kubectl (any kubectl of 1.27 or newer, whose built-in kustomize is v5).",
    );
  }
  const major = Number(/^v?(\d+)/.exec(version.kustomizeVersion ?? "")?.[1]);
  if (!(major >= MIN_KUSTOMIZE_MAJOR)) {
    throw new Error(
      `kubectl's built-in kustomize is ${version.kustomizeVersion ?? "unknown"}; deploy/k8s needs v${MIN_KUSTOMIZE_MAJOR} ` +
        "(kubectl 1.27 or newer). Debian 12's kubernetes-client (1.20) is too old.",
    );
  }
  checked = true;
}
