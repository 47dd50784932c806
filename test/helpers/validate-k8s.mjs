// Validates Kubernetes objects (a JSON array on stdin) against the schemas of the npm packages
// kubernetes-models and @kubernetes-models/prometheus-operator, and prints one result per object
// as JSON: { apiVersion, kind, name, errors }. A kind none of the API groups below defines is an
// error ("unknown kind"), never skipped. A separate process because the packages are ESM-only and
// Jest's CommonJS runtime cannot load them (as validate-openapi.mjs).
import * as core from "kubernetes-models/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as batch from "kubernetes-models/batch/v1";
import * as autoscaling from "kubernetes-models/autoscaling/v2";
import * as networking from "kubernetes-models/networking.k8s.io/v1";
import * as policy from "kubernetes-models/policy/v1";
import * as monitoring from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

// The API groups the manifests may use; a new one is added here on purpose, not picked up by chance.
const MODELS = new Map(
  [core, apps, batch, autoscaling, networking, policy, monitoring]
    .flatMap((group) => Object.values(group))
    .filter((model) => typeof model === "function" && model.apiVersion && model.kind)
    .map((model) => [`${model.apiVersion} ${model.kind}`, model]),
);

function errorsOf(object) {
  const Model = MODELS.get(`${object?.apiVersion} ${object?.kind}`);
  if (!Model) return [`unknown kind: no schema for apiVersion ${object?.apiVersion}, kind ${object?.kind}`];
  try {
    new Model(object).validate();
    return [];
  } catch (err) {
    const details = err?.errors ?? err?.validation;
    if (!Array.isArray(details)) return [String(err?.message ?? err)];
    return details.map(
      (e) =>
        `${e.instancePath || "/"} ${e.message}${e.params?.allowedValues ? ` (${e.params.allowedValues.join(", ")})` : ""}`,
    );
  }
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const objects = JSON.parse(Buffer.concat(chunks).toString("utf8"));
process.stdout.write(
  JSON.stringify(
    objects.map((o) => ({
      apiVersion: o?.apiVersion,
      kind: o?.kind,
      name: o?.metadata?.name,
      errors: errorsOf(o),
    })),
  ),
);
