/**
 * The monitoring and network-policy components of deploy/k8s checked against the code and the
 * Deployments: the alerts use metrics the processes register, Prometheus scrapes the port every
 * Deployment exposes, and the NetworkPolicies let through what the issue says and nothing more.
 */
import { registry } from "../../shared/observability/metrics";
import { K8S_OVERLAY, resolvePort, type Container } from "../helpers/manifests";
import { renderKustomization, type K8sObject } from "../helpers/kustomize";
import { requires } from "../helpers/prerequisites";

const kubectl = requires(["kubectl"]);
const objects = kubectl.met ? renderKustomization(K8S_OVERLAY) : [];
const ofKind = (kind: string) => objects.filter((o) => o.kind === kind);
const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name)!;
const deployments = ofKind("Deployment");
const containerOf = (d: K8sObject) =>
  (d.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers[0];
const podLabels = (d: K8sObject) =>
  (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** Metrics the alerts may use that are not this code's: kube-state-metrics' (kube-prometheus-stack ships it). */
const EXTERNAL_METRICS = new Set([
  "kube_deployment_status_replicas_unavailable",
  "kube_deployment_status_replicas_available",
]);
const PROMQL_WORDS = new Set([
  "and",
  "or",
  "unless",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "inf",
  "nan",
]);

/** The series names of every metric the processes register (a histogram's as Prometheus stores them). */
function registeredSeriesNames(): Set<string> {
  return new Set(
    registry.getMetricsAsArray().flatMap((m) => {
      const { name, type } = m as unknown as { name: string; type: string };
      return type === "histogram" ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
    }),
  );
}

/** The metric names a PromQL expression reads: identifiers not called as functions, outside label matchers and groupings. */
function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  return [...stripped.matchAll(/\b([a-zA-Z_:][\w:]*)\b(?!\s*\()/g)]
    .map((m) => m[1])
    .filter((w) => !PROMQL_WORDS.has(w.toLowerCase()));
}

// The objects are read while the tests are declared: without kubectl there is nothing to read.
if (!kubectl.met) kubectl.it("the monitoring and network-policy components", () => undefined);
else {
  describe("the PrometheusRule", () => {
    const rules = (
      named("PrometheusRule", "order-intake").spec as { groups: { rules: { alert: string; expr: string }[] }[] }
    ).groups.flatMap((g) => g.rules);

    it("when its alerts are read, then they cover 5xx rate, webhook failures and backlog, events not published, and readiness", () => {
      const metrics = rules.flatMap((r) => metricNamesIn(r.expr));
      expect(metrics).toEqual(
        expect.arrayContaining([
          "http_requests_total",
          "webhook_delivery_attempts_total",
          "webhook_deliveries_pending",
          "outbox_publishing_failing_seconds",
          "outbox_lag_seconds",
          "kube_deployment_status_replicas_unavailable",
        ]),
      );
    });

    it("when an alert reads a metric, then the code registers it (or it is kube-state-metrics')", () => {
      const registered = registeredSeriesNames();
      const unknown = rules.flatMap((r) =>
        metricNamesIn(r.expr)
          .filter((m) => !registered.has(m) && !EXTERNAL_METRICS.has(m))
          .map((m) => `${r.alert}: ${m}`),
      );
      expect(unknown).toEqual([]);
    });

    it("when a misspelt metric is in an expression, then the name check finds it", () => {
      expect(metricNamesIn('sum(rate(http_request_total{status=~"5.."}[5m])) by (route) > 0.01')).toEqual([
        "http_request_total",
      ]);
    });
  });

  describe("the ServiceMonitor", () => {
    const monitor = named("ServiceMonitor", "order-intake").spec as {
      selector: { matchLabels: Record<string, string> };
      endpoints: { port: string; path: string }[];
    };
    const services = ofKind("Service").filter((s) => selects(monitor.selector.matchLabels, s.metadata.labels ?? {}));

    it("when it is read, then it selects one headless Service whose port is every Deployment's `health` port", () => {
      expect(services.map((s) => s.metadata.name)).toEqual(["order-intake-metrics"]);
      const spec = services[0].spec as {
        clusterIP: string;
        selector: Record<string, string>;
        ports: { name: string; targetPort: string }[];
      };
      expect(spec.clusterIP).toBe("None");
      expect(monitor.endpoints.map((e) => [e.port, e.path])).toEqual([[spec.ports[0].name, "/metrics"]]);
      expect(deployments.length).toBeGreaterThan(0);
      for (const d of deployments) {
        expect({ deployment: d.metadata.name, selected: selects(spec.selector, podLabels(d)) }).toEqual({
          deployment: d.metadata.name,
          selected: true,
        });
        expect({ deployment: d.metadata.name, port: resolvePort(spec.ports[0].targetPort, containerOf(d)) }).toEqual({
          deployment: d.metadata.name,
          port: 9100,
        });
      }
    });
  });

  describe("the NetworkPolicies", () => {
    type Peer = {
      podSelector?: { matchLabels?: Record<string, string> };
      namespaceSelector?: unknown;
      ipBlock?: { cidr: string; except?: string[] };
    };
    type Rule = { from?: Peer[]; to?: Peer[]; ports?: { port: string | number }[] };
    type Policy = {
      podSelector: { matchLabels?: Record<string, string> };
      policyTypes: string[];
      ingress?: Rule[];
      egress?: Rule[];
    };
    const policies = ofKind("NetworkPolicy").map((p) => ({ name: p.metadata.name, spec: p.spec as Policy }));
    const appliesTo = (p: { spec: Policy }, d: K8sObject) =>
      selects(p.spec.podSelector.matchLabels ?? {}, podLabels(d));
    const component = (d: K8sObject) => podLabels(d)["app.kubernetes.io/component"];

    it("when read, then one denies every ingress and egress of every pod of the namespace", () => {
      const deny = policies.filter(
        (p) => Object.keys(p.spec.podSelector).length === 0 && !p.spec.ingress && !p.spec.egress,
      );
      expect(deny.map((p) => p.spec.policyTypes.sort())).toEqual([["Egress", "Ingress"]]);
    });

    it("when a rule lets in traffic from outside the namespace to a Deployment, then it is the gateway's port or Prometheus on the probe port", () => {
      for (const d of deployments) {
        const ports = policies
          .filter((p) => appliesTo(p, d))
          .flatMap((p) =>
            (p.spec.ingress ?? [])
              .filter((r) => !r.from || r.from.some((peer) => peer.namespaceSelector || peer.ipBlock))
              .flatMap((r) => (r.ports ?? [{ port: "any" }]).map((x) => `${p.name}:${x.port}`)),
          );
        const expected = [
          "order-intake-prometheus-scrape:health",
          ...(component(d) === "gateway" ? ["order-intake-gateway-ingress:http"] : []),
        ];
        expect({ deployment: d.metadata.name, ports: ports.sort() }).toEqual({
          deployment: d.metadata.name,
          ports: expected.sort(),
        });
      }
    });

    it("when a rule lets traffic out to addresses, then only the webhooks pods have it, on 80 and 443, never to private ranges", () => {
      for (const d of deployments) {
        const outside = policies
          .filter((p) => appliesTo(p, d))
          .flatMap((p) => (p.spec.egress ?? []).filter((r) => r.to?.some((peer) => peer.ipBlock)));
        if (component(d) !== "webhooks") {
          expect({ deployment: d.metadata.name, outside }).toEqual({ deployment: d.metadata.name, outside: [] });
          continue;
        }
        expect(outside.flatMap((r) => r.ports!.map((x) => x.port))).toEqual([80, 443]);
        const blocks = outside.flatMap((r) => r.to!.map((peer) => peer.ipBlock!));
        expect(blocks.find((b) => b.cidr === "0.0.0.0/0")?.except).toEqual(
          expect.arrayContaining(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]),
        );
      }
    });

    it("when every Deployment's egress is read, then it reaches DNS, NATS (4222) and PostgreSQL (5432)", () => {
      for (const d of deployments) {
        const ports = policies
          .filter((p) => appliesTo(p, d))
          .flatMap((p) => (p.spec.egress ?? []).flatMap((r) => (r.ports ?? []).map((x) => x.port)));
        expect({ deployment: d.metadata.name, ports }).toEqual({
          deployment: d.metadata.name,
          ports: expect.arrayContaining([53, 4222, 5432]),
        });
      }
    });

    it("when the pods talk to each other, then no policy lets one of them reach another directly (they meet over NATS)", () => {
      const appPeers = policies
        .filter((p) => p.name !== "order-intake-db")
        .flatMap((p) => [...(p.spec.ingress ?? []), ...(p.spec.egress ?? [])])
        .flatMap((r) => [...(r.from ?? []), ...(r.to ?? [])])
        .filter(
          (peer) =>
            !peer.namespaceSelector && peer.podSelector?.matchLabels?.["app.kubernetes.io/name"] === "order-intake",
        );
      expect(appPeers).toEqual([]);
    });
  });
}
