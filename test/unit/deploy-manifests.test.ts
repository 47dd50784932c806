/**
 * The deployment manifests (deploy/docker, deploy/k8s) checked against the code: the services
 * the runner knows, the variables the config module reads, the ports the processes listen on,
 * the scripts the containers run.
 */
import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../../shared/config/config";
import { ALL_SERVICES, VARIABLES } from "../../shared/config/variables";
import {
  baseManifests,
  composeAppServices,
  composeEnv,
  composeServices,
  containerEnv,
  DOCKERFILE,
  K8S_BASE,
  K8S_MONITORING,
  K8S_NETWORK_POLICIES,
  K8S_OVERLAY,
  interpolateUnset,
  ofKind,
  readKustomization,
  resolvePort,
  ROOT,
  variableNamesSetIn,
  yamlFilesIn,
  type Container,
  type Manifest,
} from "../helpers/manifests";
import { SERVICE_NODE_OPTIONS } from "../../runtime/process-limits";

const manifests = baseManifests();
const deployments = ofKind(manifests, "Deployment");
const compose = composeServices();
const appServices = composeAppServices();
const dockerfile = fs.readFileSync(DOCKERFILE, "utf8");

/** runtime/start.ts forces the exit this long after SHUTDOWN_TIMEOUT_MS. */
const START_EXIT_MARGIN_MS = 5_000;

const servicesOf = (env: Record<string, string>) =>
  (env.SERVICES ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
const containerOf = (m: Manifest): Container => m.spec!.template!.spec.containers[0];
const deploymentFor = (name: string) =>
  deployments.find((d) => servicesOf(containerEnv(containerOf(d), manifests)).join() === name);
const variableNames = new Set(Object.keys(VARIABLES));

describe("kustomize folders", () => {
  it.each([
    ["base", K8S_BASE],
    ["overlays/example", K8S_OVERLAY],
    ["components/monitoring", K8S_MONITORING],
    ["components/network-policies", K8S_NETWORK_POLICIES],
  ])("when %s/kustomization.yaml is read, then it lists exactly the YAML files of its folder", (_label, dir) => {
    const k = readKustomization(dir);
    const listed = [...(k.resources ?? []), ...(k.patches ?? []).map((p) => p.path ?? "")]
      .filter((f) => !f.startsWith(".."))
      .sort();
    expect(listed).toEqual(yamlFilesIn(dir).filter((f) => f !== "kustomization.yaml"));
  });

  it("when the base is parsed, then every object has an apiVersion, a kind and a name", () => {
    expect(manifests.length).toBeGreaterThan(0);
    const named = {
      apiVersion: expect.stringMatching(/\S/),
      kind: expect.stringMatching(/\S/),
      name: expect.stringMatching(/\S/),
    };
    for (const m of manifests)
      expect({ file: m.file, apiVersion: m.apiVersion, kind: m.kind, name: m.metadata?.name }).toEqual({
        file: m.file,
        ...named,
      });
  });
});

describe("one Deployment per service", () => {
  it("when services/ is listed, then every folder is a service the runner knows", () => {
    const folders = fs
      .readdirSync(path.join(ROOT, "services"), { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(folders.filter((f) => !(ALL_SERVICES as readonly string[]).includes(f))).toEqual([]);
  });

  it("when the Deployments are read, then each runs exactly one service and every service has one", () => {
    const ran = deployments.map((d) => servicesOf(containerEnv(containerOf(d), manifests)));
    for (const services of ran) expect(services).toHaveLength(1);
    expect(ran.flat().sort()).toEqual([...ALL_SERVICES].sort());
  });

  it.each([...ALL_SERVICES])(
    "when the %s Deployment's environment is loaded, then it is a valid distributed configuration",
    (name) => {
      const deployment = deploymentFor(name)!;
      const cfg = loadConfig(containerEnv(containerOf(deployment), manifests));
      expect(cfg.services).toEqual([name]);
      expect(cfg.transporter).toMatch(/^nats:\/\//);
      expect(cfg.databaseUrl).toMatch(/^postgres(ql)?:\/\//);
      expect(cfg.migrateOnStart).toBe(false);
      expect(cfg.demoData).toBe("never");
    },
  );

  it("when a Deployment's selector is read, then it matches its pods and one PodDisruptionBudget", () => {
    const pdbs = ofKind(manifests, "PodDisruptionBudget");
    for (const d of deployments) {
      const selector = d.spec!.selector!.matchLabels!;
      expect(d.spec!.template!.metadata!.labels).toMatchObject(selector);
      const budgets = pdbs.filter(
        (p) => JSON.stringify((p.spec as { selector: unknown }).selector) === JSON.stringify({ matchLabels: selector }),
      );
      expect(budgets.map((p) => p.metadata.name)).toEqual([d.metadata.name]);
    }
  });

  it("when the autoscalers are read, then gateway, orders and webhooks have one each and those Deployments leave replicas to it", () => {
    const targets = ofKind(manifests, "HorizontalPodAutoscaler").map(
      (h) => (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name,
    );
    expect(targets.sort()).toEqual(
      ["gateway", "orders", "webhooks"].map((s) => deploymentFor(s)!.metadata.name).sort(),
    );
    for (const d of deployments) {
      // A Deployment that also sets replicas would be scaled back at every apply.
      expect(d.spec!.replicas === undefined).toBe(targets.includes(d.metadata.name));
      if (d.spec!.replicas !== undefined) expect(d.spec!.replicas).toBeGreaterThanOrEqual(2);
    }
  });

  it("when a Deployment's pods stop, then the grace period covers preStop, the drain and the exit margin", () => {
    for (const d of deployments) {
      const container = containerOf(d);
      const cfg = loadConfig(containerEnv(container, manifests));
      const preStop = container.lifecycle?.preStop?.exec?.command;
      const preStopMs = preStop?.[0] === "sleep" ? Number(preStop[1]) * 1000 : 0;
      const graceMs = d.spec!.template!.spec.terminationGracePeriodSeconds! * 1000;
      expect(graceMs).toBeGreaterThan(preStopMs + cfg.shutdownTimeoutMs + START_EXIT_MARGIN_MS);
    }
  });

  it("when every container is read, then it asks for CPU and memory and caps memory", () => {
    for (const m of [...deployments, ...ofKind(manifests, "Job")]) {
      const r = containerOf(m).resources;
      // A Kubernetes quantity such as 50m, 96Mi or 1 (YAML may read the last as a number).
      const quantity = expect.stringMatching(/^\d+(\.\d+)?([mkMGT]i?)?$/);
      const sized = { cpu: quantity, memory: quantity, memoryLimit: quantity };
      expect({
        name: m.metadata.name,
        cpu: `${r?.requests?.cpu}`,
        memory: `${r?.requests?.memory}`,
        memoryLimit: `${r?.limits?.memory}`,
      }).toEqual({ name: m.metadata.name, ...sized });
    }
  });
});

describe("ports and probes", () => {
  it.each([...ALL_SERVICES])(
    "when the %s container is read, then it exposes the ports its process listens on and probes it",
    (name) => {
      const deployment = deploymentFor(name)!;
      const container = containerOf(deployment);
      const cfg = loadConfig(containerEnv(container, manifests));
      const port = name === "gateway" ? cfg.port : cfg.healthPort;
      expect(port).toBeGreaterThan(0);
      expect(container.ports?.map((p) => p.containerPort)).toEqual(
        name === "gateway" ? [cfg.port, cfg.healthPort] : [cfg.healthPort],
      );
      // Every process serves /metrics on HEALTH_PORT, port `health`: what the ServiceMonitor and the NetworkPolicies name.
      expect(resolvePort("health", container)).toBe(cfg.healthPort);
      expect(resolvePort(container.readinessProbe?.httpGet?.port, container)).toBe(port);
      expect(container.readinessProbe?.httpGet?.path).toBe("/readyz");
      expect(deployment.spec!.template!.metadata!.annotations?.["prometheus.io/port"]).toBe(String(cfg.healthPort));
      for (const probe of [container.livenessProbe, container.startupProbe]) {
        expect(resolvePort(probe?.httpGet?.port, container)).toBe(port);
        expect(probe?.httpGet?.path).toBe("/healthz");
      }
    },
  );

  it("when the gateway Service and Ingress are read, then they reach the gateway container's port", () => {
    const gateway = deploymentFor("gateway")!;
    const [service] = ofKind(manifests, "Service");
    const spec = service.spec as {
      selector: Record<string, string>;
      ports: { name: string; targetPort: string | number }[];
    };
    expect(spec.selector).toEqual(gateway.spec!.selector!.matchLabels);
    expect(resolvePort(spec.ports[0].targetPort, containerOf(gateway))).toBe(
      loadConfig(containerEnv(containerOf(gateway), manifests)).port,
    );
    const [ingress] = ofKind(manifests, "Ingress");
    const paths = (
      ingress.spec as { rules: { http: { paths: { path: string; backend: { service: unknown } }[] } }[] }
    ).rules.flatMap((r) => r.http.paths);
    for (const p of paths)
      expect(p.backend.service).toEqual({ name: service.metadata.name, port: { name: spec.ports[0].name } });
    expect(paths.map((p) => p.path)).toContain("/api");
  });

  it("when the Ingress is read, then the probes and metrics stay inside the cluster", () => {
    const paths = ofKind(manifests, "Ingress").flatMap((i) =>
      (i.spec as { rules: { http: { paths: { path: string }[] } }[] }).rules.flatMap((r) =>
        r.http.paths.map((p) => p.path),
      ),
    );
    const exposed = ["/healthz", "/readyz", "/metrics"].filter((probe) => paths.some((p) => probe.startsWith(p)));
    expect(exposed).toEqual([]);
  });
});

describe("configuration variables", () => {
  const composeNames = appServices.flatMap(([, s]) => Object.keys(s.environment ?? {}));

  it("when the manifests set a variable, then shared/config/variables.ts reads it", () => {
    const set = [...variableNamesSetIn(manifests), ...composeNames];
    expect(set.filter((n) => !variableNames.has(n))).toEqual([]);
  });

  it("when shared/config/variables.ts reads a variable, then the manifests set it or it has a default", () => {
    const set = variableNamesSetIn(manifests);
    const defaults = VARIABLES as Record<string, { default?: string }>;
    expect([...variableNames].filter((n) => !set.has(n) && defaults[n].default === undefined)).toEqual([]);
  });

  it("when the migration Job's environment is loaded, then it migrates a PostgreSQL database with the migrate script", () => {
    const [job] = ofKind(manifests, "Job");
    const container = containerOf(job);
    expect(loadConfig(containerEnv(container, manifests)).databaseUrl).toMatch(/^postgres(ql)?:\/\//);
    expect(container.command).toEqual(["node", "dist/runtime/migrate.js"]);
  });
});

describe("one image", () => {
  const k8sImages = [...deployments, ...ofKind(manifests, "Job")].map((m) => containerOf(m).image);

  it("when every container is read, then Kubernetes and Compose run the same single image", () => {
    const composeImages = appServices.map(([, s]) => s.image);
    expect(new Set([...k8sImages, ...composeImages]).size).toBe(1);
  });

  it("when the example overlay renames the image, then it names the base's image", () => {
    const [image] = k8sImages;
    expect(readKustomization(K8S_OVERLAY).images?.map((i) => i.name)).toEqual([image.split(":")[0]]);
  });

  it("when a manifest runs a compiled script, then its TypeScript source exists", () => {
    const texts = [
      dockerfile,
      fs.readFileSync(path.join(ROOT, "deploy/docker/compose.yaml"), "utf8"),
      ...yamlFilesIn(K8S_BASE).map((f) => fs.readFileSync(path.join(K8S_BASE, f), "utf8")),
    ];
    const scripts = new Set(texts.flatMap((t) => [...t.matchAll(/dist\/([\w/.-]+)\.js/g)].map((m) => m[1])));
    expect(scripts.size).toBeGreaterThan(0);
    for (const s of scripts) expect(`${s}: ${fs.existsSync(path.join(ROOT, `${s}.ts`))}`).toBe(`${s}: true`);
  });
});

describe("Dockerfile", () => {
  it("when it is read, then it builds on Node 22, installs production dependencies only and runs as a non-root user", () => {
    const froms = [...dockerfile.matchAll(/^ARG NODE_IMAGE=(\S+)|^FROM (\S+)/gm)].map((m) => m[1] ?? m[2]);
    expect(froms[0]).toBe("node:22-bookworm-slim");
    expect(froms.slice(1).filter((f) => !f.startsWith("${NODE_IMAGE}"))).toEqual([]);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    const users = [...dockerfile.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)$/);
  });

  it("when its defaults are loaded, then it runs every service and exposes and health-checks their ports", () => {
    // A value is a word, or a quoted text with spaces (NODE_OPTIONS carries two flags).
    const env = Object.fromEntries(
      [...dockerfile.matchAll(/^(?:ENV\s+|\s+)(\w+)=("[^"]*"|\S+?)\s*\\?$/gm)].map((m) => [
        m[1],
        m[2].replace(/^"(.*)"$/, "$1"),
      ]),
    );
    const cfg = loadConfig(env);
    expect([...cfg.services].sort()).toEqual([...ALL_SERVICES].sort());
    const exposed = (/^EXPOSE (.+)$/m.exec(dockerfile)?.[1] ?? "").split(/\s+/).map(Number);
    expect(exposed.sort()).toEqual([cfg.port, cfg.healthPort].sort());
    expect(dockerfile).toMatch(/^HEALTHCHECK [\s\S]*?CMD \["node", "dist\/runtime\/healthcheck.js"\]/m);
    // The image runs Node with the flags start:cluster and the benchmark use.
    expect(env.NODE_OPTIONS).toBe(SERVICE_NODE_OPTIONS);
    // The Kubernetes ConfigMap and the image agree on the health port.
    expect(loadConfig(containerEnv(containerOf(deploymentFor("orders")!), manifests)).healthPort).toBe(cfg.healthPort);
  });
});

describe("Compose", () => {
  it.each([...ALL_SERVICES])(
    "when the %s service is read, then it runs only that service on NATS and PostgreSQL after the migration",
    (name) => {
      const matching = appServices.filter(([, s]) => servicesOf(composeEnv(s)).join() === name);
      expect(matching).toHaveLength(1);
      const [, service] = matching[0];
      const cfg = loadConfig(composeEnv(service));
      expect(cfg.transporter).toBe("nats://nats:4222");
      expect(cfg.databaseUrl).toMatch(/^postgres:\/\/[^@]+@postgres:5432\//);
      expect(cfg.migrateOnStart).toBe(false);
      expect(service.depends_on).toEqual({
        migrate: { condition: "service_completed_successfully" },
        nats: { condition: "service_healthy" },
        postgres: { condition: "service_healthy" },
      });
      expect(service.healthcheck?.test).toEqual("node dist/runtime/healthcheck.js");
    },
  );

  it("when the migration service is read, then it runs once, migrates, and waits for PostgreSQL only", () => {
    const migrate = compose.migrate;
    expect(migrate.command).toEqual(["node", "dist/runtime/migrate.js"]);
    expect(migrate.depends_on).toEqual({ postgres: { condition: "service_healthy" } });
    expect(migrate.healthcheck?.disable).toBe(true);
  });

  it("when the gateway and webhooks services are read, then the gateway publishes its port and webhooks runs twice", () => {
    const gatewayPort = loadConfig(composeEnv(appServices.find(([n]) => n === "gateway")![1])).port;
    expect(compose.gateway.ports?.map(interpolateUnset)).toEqual([`${gatewayPort}:${gatewayPort}`]);
    expect(compose.webhooks.deploy?.replicas).toBe(2);
  });

  it("when the infrastructure is read, then NATS runs JetStream and both servers have healthchecks", () => {
    expect(compose.nats.command).toContain("-js");
    expect(interpolateUnset(compose.nats.image!)).toMatch(/^nats:2\.10/);
    expect(interpolateUnset(compose.postgres.image!)).toMatch(/^postgres:16/);
    for (const s of [compose.nats, compose.postgres]) expect(s.healthcheck?.test?.length).toBeGreaterThan(0);
  });
});
