/**
 * The rendered Kubernetes manifests (deploy/k8s base and overlays/example) validated offline
 * against the Kubernetes and Prometheus Operator schemas (test/helpers/k8s-validator.ts), as
 * `kubectl kustomize` renders them.
 */
import { K8S_BASE, K8S_OVERLAY } from "../helpers/manifests";
import { renderKustomization } from "../helpers/kustomize";
import { validateK8sObjects } from "../helpers/k8s-validator";
import { requires } from "../helpers/prerequisites";

const kubectl = requires(["kubectl"]);

const folders: [string, string][] = [
  ["base", K8S_BASE],
  ["overlays/example", K8S_OVERLAY],
];

kubectl.describe.each(folders)("the %s kustomization", (_label, dir) => {
  const rendered = kubectl.met ? renderKustomization(dir) : [];

  it("when rendered, then every object is valid against the Kubernetes and Prometheus Operator schemas", async () => {
    expect(rendered.length).toBeGreaterThan(10);
    const results = await validateK8sObjects(rendered);
    expect(results).toHaveLength(rendered.length);
    expect(results.filter((r) => r.errors.length > 0)).toEqual([]);
  });
});

kubectl.describe("the schema validation", () => {
  // One validator process for every case: it takes a few seconds to load the schemas.
  let errors: string[][] = [];
  beforeAll(async () => {
    const overlay = renderKustomization(K8S_OVERLAY);
    const find = (kind: string, name: string) =>
      structuredClone(overlay.find((o) => o.kind === kind && o.metadata.name === name)!);
    const deployment = find("Deployment", "order-intake-orders");
    (deployment.spec as Record<string, unknown>).replicas = "two";
    const serviceMonitor = find("ServiceMonitor", "order-intake");
    (serviceMonitor.spec as { endpoints: Record<string, unknown>[] }).endpoints[0].interval = "every 30 seconds";
    const networkPolicy = find("NetworkPolicy", "order-intake-nats-egress");
    (networkPolicy.spec as { egress: { ports: Record<string, unknown>[] }[] }).egress[0].ports[0].port = [4222];
    const unknown = { apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } };
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
