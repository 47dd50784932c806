/**
 * Validates Kubernetes objects against the Kubernetes and Prometheus Operator schemas bundled in
 * npm packages (validate-k8s.mjs, in a child process: the packages are ESM-only; Jest runs tests
 * as CommonJS). Offline: no cluster, no schema download.
 *
 * What it does not catch: a field the schema does not know (a typo such as `replica:`) — the
 * packages' schemas allow extra properties. `kubectl apply --dry-run=server` does, on a cluster.
 */
import { execFile } from "node:child_process";
import path from "node:path";

export interface ObjectValidation {
  apiVersion: string;
  kind: string;
  name: string;
  /** Empty when the object is valid; "unknown kind: ..." when no schema describes it. */
  errors: string[];
}

export function validateK8sObjects(objects: unknown[]): Promise<ObjectValidation[]> {
  const script = path.join(__dirname, "validate-k8s.mjs");
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [script], { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`validate-k8s.mjs failed: ${stderr || err.message}`));
      else resolve(JSON.parse(stdout) as ObjectValidation[]);
    });
    child.stdin?.end(JSON.stringify(objects));
  });
}
