/**
 * The rendered Kubernetes manifests (deploy/k8s base and overlays/example) validated offline
 * against the Kubernetes and Prometheus Operator schemas (test/helpers/k8s-validator.ts). The
 * rendering is test/helpers/kustomize.ts, so that CI needs no kubectl; where a kubectl with
 * kustomize 4 or later is installed, its output must be the same objects.
 */
import { execFileSync } from "node:child_process";
import { parseAllDocuments } from "yaml";
import { K8S_BASE, K8S_OVERLAY } from "../helpers/manifests";
import { renderKustomization, type K8sObject } from "../helpers/kustomize";
import { validateK8sObjects } from "../helpers/k8s-validator";

/** kubectl, if it is there and its kustomize reads these files (4.0 or later); otherwise why not. */
function kubectlKustomize(): { ok: true } | { ok: false; reason: string } {
  let version: { kustomizeVersion?: string; clientVersion?: { gitVersion?: string } };
  try {
    version = JSON.parse(execFileSync("kubectl", ["version", "--client", "-o", "json"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })) as typeof version;
  } catch {
    return { ok: false, reason: "kubectl is not installed" };
  }
  const major = Number(/^v(\d+)/.exec(version.kustomizeVersion ?? "")?.[1] ?? 0);
  return major >= 4 ? { ok: true } : { ok: false, reason: `kubectl ${version.clientVersion?.gitVersion ?? ""} bundles no kustomize 4.0 or later (Debian 12's has 2.0)` };
}

const kubectl = kubectlKustomize();
if (!kubectl.ok) console.warn(`k8s-schemas: comparison with kubectl kustomize skipped: ${kubectl.reason}`);

const key = (o: K8sObject) => `${o.apiVersion} ${o.kind} ${o.metadata.namespace ?? ""}/${o.metadata.name}`;
const byKey = (objects: K8sObject[]) => Object.fromEntries(objects.map((o) => [key(o), o]));

const folders: [string, string][] = [["base", K8S_BASE], ["overlays/example", K8S_OVERLAY]];

describe.each(folders)("the %s kustomization", (_label, dir) => {
  const rendered = renderKustomization(dir);

  it("when rendered, then every object is valid against the Kubernetes and Prometheus Operator schemas", async () => {
    expect(rendered.length).toBeGreaterThan(10);
    const results = await validateK8sObjects(rendered);
    expect(results).toHaveLength(rendered.length);
    expect(results.filter((r) => r.errors.length > 0)).toEqual([]);
  });

  (kubectl.ok ? it : it.skip)(`when kubectl kustomize renders it, then it prints the same objects${kubectl.ok ? "" : ` (skipped: ${kubectl.reason})`}`, () => {
    const output = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8" });
    const fromKubectl = parseAllDocuments(output).map((d) => d.toJS() as K8sObject);
    expect(byKey(rendered)).toEqual(byKey(fromKubectl));
    expect(rendered).toHaveLength(fromKubectl.length);
  });
});

describe("the schema validation", () => {
  const overlay = renderKustomization(K8S_OVERLAY);
  const find = (kind: string, name: string) => structuredClone(overlay.find((o) => o.kind === kind && o.metadata.name === name)!);

  const deployment = find("Deployment", "order-intake-orders");
  (deployment.spec as Record<string, unknown>).replicas = "two";
  const serviceMonitor = find("ServiceMonitor", "order-intake");
  (serviceMonitor.spec as { endpoints: Record<string, unknown>[] }).endpoints[0].interval = "every 30 seconds";
  const networkPolicy = find("NetworkPolicy", "order-intake-nats-egress");
  (networkPolicy.spec as { egress: { ports: Record<string, unknown>[] }[] }).egress[0].ports[0].port = [4222];
  const unknown = { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } };

  // One validator process for every case: it takes a few seconds to load the schemas.
  let errors: string[][] = [];
  beforeAll(async () => {
    errors = (await validateK8sObjects([deployment, serviceMonitor, networkPolicy, unknown])).map((r) => r.errors);
  });

  it("when a Deployment's replicas is a string, then it is refused naming the field", () => {
    expect(errors[0]).toEqual(["/spec/replicas must be integer"]);
  });

  it("when a ServiceMonitor's scrape interval is not a duration, then it is refused", () => {
    expect(errors[1]).toEqual([expect.stringMatching(/^\/spec\/endpoints\/0\/interval must match pattern/)]);
  });

  it("when a NetworkPolicy's port is a list, then it is refused", () => {
    expect(errors[2].length).toBeGreaterThan(0);
    expect(errors[2].every((e) => e.startsWith("/spec/egress/0/ports/0/port"))).toBe(true);
  });

  it("when an object is of a kind no schema describes, then it is refused, not skipped", () => {
    expect(errors[3]).toEqual(["unknown kind: no schema for apiVersion example.com/v1, kind Widget"]);
  });
});
