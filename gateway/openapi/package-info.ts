/**
 * The name and version of this software, from package.json. Read from disk rather than imported:
 * a JSON import makes tsc copy package.json into dist/, which then shadows the real one.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

export interface PackageInfo {
  name: string;
  version: string;
}

/** The nearest package.json above this file: the project's, from the sources and from dist/ alike. */
function findPackageJson(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "package.json");
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`No package.json above ${from}.`);
  }
}

let cached: PackageInfo | null = null;

export function packageInfo(): PackageInfo {
  if (!cached) {
    const { name, version } = JSON.parse(readFileSync(findPackageJson(__dirname), "utf8")) as PackageInfo;
    cached = { name, version };
  }
  return cached;
}
