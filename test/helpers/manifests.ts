/**
 * Reads the deployment manifests of deploy/ as plain objects, and works out the environment a
 * container would get, so that tests can check them against the code (shared/config/variables.ts).
 */
import fs from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";

export const ROOT = path.resolve(__dirname, "../..");
export const K8S_BASE = path.join(ROOT, "deploy/k8s/base");
export const K8S_OVERLAY = path.join(ROOT, "deploy/k8s/overlays/example");
/** Optional parts an overlay includes: Prometheus Operator monitoring, NetworkPolicies. */
export const K8S_MONITORING = path.join(ROOT, "deploy/k8s/components/monitoring");
export const K8S_NETWORK_POLICIES = path.join(ROOT, "deploy/k8s/components/network-policies");
export const COMPOSE_FILE = path.join(ROOT, "deploy/docker/compose.yaml");
export const DOCKERFILE = path.join(ROOT, "deploy/docker/Dockerfile");

export type Env = Record<string, string>;

export interface EnvVar {
  name: string;
  value?: string;
}
export interface ContainerPort {
  name?: string;
  containerPort: number;
}
export interface Probe {
  httpGet?: { path: string; port: string | number };
}
export interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: ContainerPort[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}
export interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
}
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  data?: Record<string, unknown>;
  stringData?: Record<string, unknown>;
  spec?: Record<string, unknown> & {
    replicas?: number;
    selector?: { matchLabels?: Record<string, string> };
    template?: { metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec };
  };
  file: string;
}

export interface Kustomization {
  resources?: string[];
  patches?: { path?: string }[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

export function readYaml(file: string): unknown[] {
  const docs = parseAllDocuments(fs.readFileSync(file, "utf8"), { merge: true });
  return docs
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0].message}`);
      return doc.toJS() as unknown;
    })
    .filter((d) => d !== null && d !== undefined);
}

export function yamlFilesIn(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
}

export function readKustomization(dir: string): Kustomization {
  return readYaml(path.join(dir, "kustomization.yaml"))[0] as Kustomization;
}

/** Every object of the base, each with the file it came from. */
export function baseManifests(): Manifest[] {
  return yamlFilesIn(K8S_BASE)
    .filter((f) => f !== "kustomization.yaml")
    .flatMap((f) => readYaml(path.join(K8S_BASE, f)).map((m) => ({ ...(m as Manifest), file: f })));
}

export function ofKind(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((m) => m.kind === kind);
}

function stringMap(record: Record<string, unknown> | undefined, where: string): Env {
  const out: Env = {};
  for (const [k, v] of Object.entries(record ?? {})) {
    if (typeof v !== "string")
      throw new Error(`${where}: ${k} must be a string (Kubernetes refuses other types), got ${typeof v}`);
    out[k] = v;
  }
  return out;
}

/** The environment Kubernetes gives a container: envFrom sources in order, then env. */
export function containerEnv(container: Container, manifests: Manifest[]): Env {
  const env: Env = {};
  for (const source of container.envFrom ?? []) {
    const ref = source.configMapRef ?? source.secretRef;
    const kind = source.configMapRef ? "ConfigMap" : "Secret";
    const found = manifests.find((m) => m.kind === kind && m.metadata.name === ref?.name);
    if (!found)
      throw new Error(`container ${container.name} reads ${kind} ${ref?.name}, which the base does not define`);
    Object.assign(env, stringMap(kind === "ConfigMap" ? found.data : found.stringData, `${kind} ${ref?.name}`));
  }
  for (const e of container.env ?? []) env[e.name] = e.value ?? "";
  return env;
}

/** The variable names a container sets itself (env) and through its envFrom sources. */
export function variableNamesSetIn(manifests: Manifest[]): Set<string> {
  const names = new Set<string>();
  for (const m of manifests) {
    if (m.kind === "ConfigMap") Object.keys(m.data ?? {}).forEach((n) => names.add(n));
    if (m.kind === "Secret") Object.keys(m.stringData ?? {}).forEach((n) => names.add(n));
    for (const c of m.spec?.template?.spec.containers ?? []) (c.env ?? []).forEach((e) => names.add(e.name));
  }
  return names;
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  ports?: string[];
  deploy?: { replicas?: number };
  stop_grace_period?: string;
}

export function composeServices(): Record<string, ComposeService> {
  return (readYaml(COMPOSE_FILE)[0] as { services: Record<string, ComposeService> }).services;
}

/** Compose's `${NAME:-default}` / `${NAME}` as they read with NAME unset (tests do not read the environment). */
export function interpolateUnset(value: string): string {
  return value.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_m, _name: string, fallback?: string) => fallback ?? "");
}

/** The compose services that run the application image (they have a build section). */
export function composeAppServices(): [string, ComposeService][] {
  return Object.entries(composeServices()).filter(([, s]) => s.build !== undefined);
}

export function composeEnv(service: ComposeService): Env {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolateUnset(String(v))]),
  );
}

/** A probe's or Service's port (a name or a number) resolved against a container's ports. */
export function resolvePort(port: string | number | undefined, container: Container): number | undefined {
  if (typeof port === "number") return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}
