/**
 * Renders deploy/k8s's kustomizations without kubectl, for the schema tests in CI.
 *
 * Why not kubectl: CI installs Debian packages and npm packages only; Debian 12's kubectl
 * (kubernetes-client 1.20) bundles kustomize 2.0, which cannot read these files (`labels`,
 * `patches`, `components` came later), and no npm package ships kustomize. So this renders the
 * subset of kustomize the project uses, and refuses anything else by name rather than render it
 * differently; test/unit/k8s-schemas.test.ts checks its output equals `kubectl kustomize`'s
 * wherever a kubectl with kustomize 4 or later is installed (every developer machine here).
 *
 * Supported: `resources` (files and folders), `components`, `namespace`, `labels` (metadata only),
 * `images`, and `patches` by path as strategic-merge patches (maps merged, `null` removes a key,
 * `$patch: delete` removes the object, lists replaced). A patch that would merge a list
 * Kubernetes merges by key (containers, env, ports...) is refused: kustomize merges those.
 */
import fs from "node:fs";
import path from "node:path";
import { readYaml } from "./manifests";

export type K8sObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

interface LabelsEntry { pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }
interface ImageEntry { name: string; newName?: string; newTag?: string }
interface KustomizationFile {
  apiVersion?: string;
  kind?: string;
  resources?: string[];
  components?: string[];
  namespace?: string;
  labels?: LabelsEntry[];
  images?: ImageEntry[];
  patches?: { path?: string }[];
}

const SUPPORTED_FIELDS = new Set(["apiVersion", "kind", "resources", "components", "namespace", "labels", "images", "patches"]);

/** The cluster-scoped kinds the namespace transformer leaves alone (the rest are namespaced, as kustomize assumes). */
const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume", "StorageClass", "PriorityClass", "IngressClass"]);

/** Lists that Kubernetes' strategic merge merges by a key instead of replacing them. */
const KEYED_LISTS = new Set(["containers", "initContainers", "ephemeralContainers", "env", "ports", "volumes", "volumeMounts", "imagePullSecrets", "hostAliases", "topologySpreadConstraints", "conditions", "ownerReferences", "finalizers"]);

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function readKustomizationFile(dir: string): KustomizationFile {
  const file = path.join(dir, "kustomization.yaml");
  const k = readYaml(file)[0] as KustomizationFile;
  const unsupported = Object.keys(k).filter((f) => !SUPPORTED_FIELDS.has(f));
  if (unsupported.length > 0) throw new Error(`${file}: ${unsupported.join(", ")} not supported by test/helpers/kustomize.ts (render with kubectl, or extend it)`);
  return k;
}

function strategicMerge(target: Record<string, unknown>, patch: Record<string, unknown>, where: string): Record<string, unknown> {
  const out = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$")) throw new Error(`${where}.${key}: patch directive not supported`);
    if (value === null) delete out[key];
    else if (isMap(value) && isMap(out[key])) out[key] = strategicMerge(out[key], value, `${where}.${key}`);
    else if (Array.isArray(value) && Array.isArray(out[key]) && KEYED_LISTS.has(key)) {
      throw new Error(`${where}.${key}: merging a keyed list is not supported by test/helpers/kustomize.ts`);
    } else out[key] = value;
  }
  return out;
}

function applyPatch(objects: K8sObject[], patch: K8sObject, file: string): K8sObject[] {
  const matches = (o: K8sObject) => o.kind === patch.kind && o.metadata.name === patch.metadata.name
    && (patch.metadata.namespace === undefined || patch.metadata.namespace === o.metadata.namespace);
  if (objects.filter(matches).length !== 1) throw new Error(`${file}: patch of ${patch.kind} ${patch.metadata.name} matches ${objects.filter(matches).length} objects`);
  const { $patch: directive, ...body } = patch as K8sObject & { $patch?: string };
  if (directive === "delete") return objects.filter((o) => !matches(o));
  if (directive !== undefined) throw new Error(`${file}: $patch: ${directive} not supported`);
  return objects.map((o) => (matches(o) ? (strategicMerge(o, body, `${patch.kind} ${patch.metadata.name}`) as K8sObject) : o));
}

/** Every `containers`/`initContainers` list inside an object, wherever the kind keeps its pod template. */
function containerLists(value: unknown): Record<string, unknown>[][] {
  if (Array.isArray(value)) return value.flatMap(containerLists);
  if (!isMap(value)) return [];
  return Object.entries(value).flatMap(([key, v]) =>
    (key === "containers" || key === "initContainers") && Array.isArray(v) ? [v as Record<string, unknown>[]] : containerLists(v));
}

function setImages(o: K8sObject, images: ImageEntry[]): K8sObject {
  const copy = structuredClone(o);
  for (const container of containerLists(copy).flat()) {
    const image = String(container.image ?? "");
    const [, name, tag] = /^(.*?)(?::([^:/]+))?$/.exec(image) ?? [];
    const entry = images.find((i) => i.name === name);
    if (entry) container.image = `${entry.newName ?? name}${entry.newTag ?? tag ? `:${entry.newTag ?? tag}` : ""}`;
  }
  return copy;
}

function transform(objects: K8sObject[], k: KustomizationFile, dir: string): K8sObject[] {
  let out = objects;
  for (const p of k.patches ?? []) {
    if (!p.path) throw new Error(`${dir}: only patches given by path are supported`);
    const file = path.join(dir, p.path);
    for (const patch of readYaml(file) as K8sObject[]) out = applyPatch(out, patch, file);
  }
  if (k.namespace) {
    const ns = k.namespace;
    out = out.map((o) => (CLUSTER_SCOPED.has(o.kind) ? o : { ...o, metadata: { ...o.metadata, namespace: ns } }));
  }
  for (const entry of k.labels ?? []) {
    if (entry.includeSelectors || entry.includeTemplates) throw new Error(`${dir}: labels into selectors or templates not supported`);
    out = out.map((o) => ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...entry.pairs } } }));
  }
  if (k.images) out = out.map((o) => setImages(o, k.images!));
  return out;
}

function loadResources(dir: string, entries: string[]): K8sObject[] {
  return entries.flatMap((entry) => {
    const target = path.join(dir, entry);
    return fs.statSync(target).isDirectory() ? renderKustomization(target) : (readYaml(target) as K8sObject[]);
  });
}

/** The objects `kubectl kustomize <dir>` would print (in no particular order). */
export function renderKustomization(dir: string): K8sObject[] {
  const k = readKustomizationFile(dir);
  let objects = loadResources(dir, k.resources ?? []);
  for (const componentDir of (k.components ?? []).map((c) => path.join(dir, c))) {
    const component = readKustomizationFile(componentDir);
    if (component.kind !== "Component") throw new Error(`${componentDir}: a component's kind must be Component`);
    objects = transform([...objects, ...loadResources(componentDir, component.resources ?? [])], component, componentDir);
  }
  return transform(objects, k, dir);
}
