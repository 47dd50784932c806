/**
 * deploy/k8s's kustomizations as `kubectl kustomize` renders them: the objects a user applies.
 * It needs a kubectl whose kustomize reads these files (4.0 or later: `labels`, `patches` and
 * `components` came then; Debian 12's kubernetes-client 1.20 bundles 2.0). Tests that render
 * declare the prerequisite "kubectl" (test/helpers/prerequisites.ts): skipped with the reason on
 * a machine without it, a failure in CI.
 */
import { execFileSync } from "node:child_process";
import { parseAllDocuments } from "yaml";

export type K8sObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

/** Why kubectl cannot render the kustomizations here, or null when it can. */
export function kubectlKustomizeMissing(): string | null {
  let version: { kustomizeVersion?: string; clientVersion?: { gitVersion?: string } };
  try {
    const output = execFileSync("kubectl", ["version", "--client", "-o", "json"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    version = JSON.parse(output) as typeof version;
  } catch {
    return "needs kubectl with kustomize 4 or later: kubectl is not installed";
  }
  const major = Number(/^v(\d+)/.exec(version.kustomizeVersion ?? "")?.[1] ?? 0);
  return major >= 4
    ? null
    : `needs kubectl with kustomize 4 or later: kubectl ${version.clientVersion?.gitVersion ?? ""} bundles kustomize ${version.kustomizeVersion ?? "(none)"}`;
}

/** Every object `kubectl kustomize <dir>` prints. */
export function renderKustomization(dir: string): K8sObject[] {
  const output = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
  return parseAllDocuments(output).map((d) => d.toJS() as K8sObject);
}
