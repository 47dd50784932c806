/**
 * The sending software, as `User-Agent: <name>/<version>` names it: read from package.json,
 * found by walking up from this file (the same from the sources and from dist/).
 */
import fs from "node:fs";
import path from "node:path";

function findPackageJson(from: string): { name: string; version: string } {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "package.json");
    if (fs.existsSync(candidate)) {
      const pkg = JSON.parse(fs.readFileSync(candidate, "utf8")) as { name?: string; version?: string };
      if (pkg.name && pkg.version) return { name: pkg.name, version: pkg.version };
    }
    if (path.dirname(dir) === dir) throw new Error(`No package.json with a name and version above ${from}`);
  }
}

let userAgent: string | null = null;

export function productUserAgent(): string {
  if (userAgent === null) {
    const pkg = findPackageJson(__dirname);
    userAgent = `${pkg.name}/${pkg.version}`;
  }
  return userAgent;
}
