/**
 * The import graph of the application's own source, drawn from the files' text: a regex over
 * `import`/`export ... from`, side-effect imports, `import()` and `require()` (the compiler has no
 * JS API to ask), and the layering rules of docs/architecture.md checked against it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** The application's top level: everything that ships (tests and benchmarks may import anything). */
export const APPLICATION_ROOTS = ["moleculer.config.ts", "runtime", "gateway", "services", "shared"];

export interface ImportEdge {
  /** Both paths relative to the repository root, with `/` separators and the `.ts` extension. */
  from: string;
  to: string;
}

const SPECIFIER_PATTERNS = [
  /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm,
  /^\s*import\s*["']([^"']+)["']/gm,
  /\b(?:import|require)\(\s*["']([^"']+)["']\s*\)/g,
];

/** Comments may name a module (`see shared/messaging/events.ts`) without importing it. */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

/** The module specifiers a file imports, relative ones only (packages and `node:` are no layer). */
export function relativeSpecifiers(source: string): string[] {
  const text = withoutComments(source);
  return SPECIFIER_PATTERNS.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[1])).filter((s) =>
    s.startsWith("."),
  );
}

function resolveSpecifier(root: string, fromFile: string, specifier: string): string {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), specifier));
  const candidates = [target, `${target}.ts`, `${target}/index.ts`];
  return candidates.find((candidate) => candidate.endsWith(".ts") && existsAsFile(root, candidate)) ?? target;
}

function existsAsFile(root: string, relative: string): boolean {
  const absolute = path.join(root, relative);
  return existsSync(absolute) && statSync(absolute).isFile();
}

/** The `.ts` files under `entries` (folders or files), relative to `root`. */
export function sourceFiles(root: string, entries: readonly string[] = APPLICATION_ROOTS): string[] {
  return entries.flatMap((entry) => {
    if (entry.endsWith(".ts")) return [entry];
    const children = readdirSync(path.join(root, entry), { withFileTypes: true });
    return sourceFiles(
      root,
      children.filter((c) => c.isDirectory() || c.name.endsWith(".ts")).map((c) => path.posix.join(entry, c.name)),
    );
  });
}

export function importGraph(root: string, entries: readonly string[] = APPLICATION_ROOTS): ImportEdge[] {
  return sourceFiles(root, entries).flatMap((file) =>
    relativeSpecifiers(readFileSync(path.join(root, file), "utf8")).map((specifier) => ({
      from: file,
      to: resolveSpecifier(root, file, specifier),
    })),
  );
}

/** The unit a file belongs to: a top-level folder, `moleculer.config.ts`, or `services/<name>`. */
export function unitOf(file: string): string {
  const [top, second] = file.split("/");
  return top === "services" && second !== undefined && file.split("/").length > 2 ? `services/${second}` : top;
}

const topLevelOf = (file: string) => file.split("/")[0];

export interface Rule {
  name: string;
  forbids: (edge: ImportEdge) => boolean;
}

const ABOVE_SHARED = new Set(["services", "gateway", "runtime", "moleculer.config.ts"]);

export const LAYERING_RULES: readonly Rule[] = [
  {
    name: "shared/ imports nothing from services/, gateway/, runtime/ or moleculer.config.ts",
    forbids: ({ from, to }) => topLevelOf(from) === "shared" && ABOVE_SHARED.has(topLevelOf(to)),
  },
  {
    name: "a service imports no other service (it calls its actions)",
    forbids: ({ from, to }) =>
      topLevelOf(from) === "services" && topLevelOf(to) === "services" && unitOf(from) !== unitOf(to),
  },
  {
    name: "a service imports nothing from gateway/ or runtime/",
    forbids: ({ from, to }) => topLevelOf(from) === "services" && ["gateway", "runtime"].includes(topLevelOf(to)),
  },
  {
    name: "gateway/ imports no service and nothing from runtime/ (the composition root hands it the service descriptions)",
    forbids: ({ from, to }) => topLevelOf(from) === "gateway" && ["services", "runtime"].includes(topLevelOf(to)),
  },
];

/** Each broken rule, with the imports that break it, as `from → to`. */
export function violations(
  edges: readonly ImportEdge[],
  rules: readonly Rule[] = LAYERING_RULES,
): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const rule of rules) {
    const breaking = edges.filter(rule.forbids).map(({ from, to }) => `${from} → ${to}`);
    if (breaking.length > 0) found[rule.name] = breaking;
  }
  return found;
}

/**
 * The cycles between top-level folders (`shared` ⇄ `gateway` and longer), each as the folders
 * along it, starting and ending with the same one. Imports inside one folder are no arrow.
 */
export function folderCycles(edges: readonly ImportEdge[]): string[][] {
  const arrows = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const [a, b] = [topLevelOf(from), topLevelOf(to)];
    if (a === b) continue;
    if (!arrows.has(a)) arrows.set(a, new Set());
    arrows.get(a)!.add(b);
  }
  const cycles: string[][] = [];
  const seen = new Set<string>();
  const walk = (folder: string, trail: string[]): void => {
    const at = trail.indexOf(folder);
    if (at >= 0) {
      const cycle = [...trail.slice(at), folder];
      const key = [...cycle.slice(0, -1)].sort().join(" ");
      if (!seen.has(key)) cycles.push(cycle);
      seen.add(key);
      return;
    }
    for (const next of arrows.get(folder) ?? []) walk(next, [...trail, folder]);
  };
  for (const folder of arrows.keys()) walk(folder, []);
  return cycles;
}
