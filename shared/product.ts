/**
 * This software's name and version, from package.json (the OpenAPI `info`, the webhooks'
 * `User-Agent: <name>/<version>`). Read from disk rather than imported: a JSON import makes tsc
 * copy package.json into dist/, where it would shadow the real one. Found by walking up from
 * this file, so the same from the sources and from dist/.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

export interface Product {
  name: string;
  version: string;
}

function findPackageJson(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "package.json");
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`No package.json above ${from}.`);
  }
}

let cached: Product | null = null;

export function product(): Product {
  if (!cached) {
    const { name, version } = JSON.parse(readFileSync(findPackageJson(__dirname), "utf8")) as Product;
    cached = { name, version };
  }
  return cached;
}

/** `<name>/<version>`, as the webhooks' User-Agent. */
export function productUserAgent(): string {
  const { name, version } = product();
  return `${name}/${version}`;
}
