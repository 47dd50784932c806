/**
 * The import graph of the application's own source, drawn from the files' text: a regex over
 * `import`/`export ... from` (`import type` included: a type-only import is still an arrow a
 * reader follows), side-effect imports, `import()` and `require()`; the layering rules of
 * docs/architecture.md checked against it, and the import cycles between files.
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

/** Whether a path (relative to the repository root) is a file. */
export type FileExists = (relative: string) => boolean;

function resolveSpecifier(exists: FileExists, fromFile: string, specifier: string): string {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), specifier));
  const candidates = [target, `${target}.ts`, `${target}/index.ts`, target.replace(/\.js$/, ".ts")];
  return candidates.find((candidate) => candidate.endsWith(".ts") && exists(candidate)) ?? target;
}

const existsUnder =
  (root: string): FileExists =>
  (relative) => {
    const absolute = path.join(root, relative);
    return existsSync(absolute) && statSync(absolute).isFile();
  };

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

/**
 * The imports of the given sources (path → text), each resolved to the file it names; by
 * default only the given paths exist, so samples can be drawn without touching the disk.
 */
export function edgesOf(
  sources: Record<string, string>,
  exists: FileExists = (file) => Object.hasOwn(sources, file),
): ImportEdge[] {
  return Object.entries(sources).flatMap(([file, text]) =>
    relativeSpecifiers(text).map((specifier) => ({ from: file, to: resolveSpecifier(exists, file, specifier) })),
  );
}

export function importGraph(root: string, entries: readonly string[] = APPLICATION_ROOTS): ImportEdge[] {
  const files = sourceFiles(root, entries);
  const sources = Object.fromEntries(files.map((file) => [file, readFileSync(path.join(root, file), "utf8")]));
  return edgesOf(sources, existsUnder(root));
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
  {
    name: "services/ and gateway/ import nothing from moleculer.config.ts (the broker's options are the composition root's)",
    forbids: ({ from, to }) => ["services", "gateway"].includes(topLevelOf(from)) && to === "moleculer.config.ts",
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

/**
 * The import cycles between files, each written `a.ts → b.ts → a.ts` from its first file by name. Every file that sits on a
 * cycle is on at least one of those listed (the shortest through it), so a tangle of several
 * circles is shown whole, yet each circle is listed once.
 */
export function fileCycles(edges: readonly ImportEdge[]): string[] {
  const arrows = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!arrows.has(from)) arrows.set(from, new Set());
    arrows.get(from)!.add(to);
  }
  const cycles = new Map<string, string[]>();
  for (const component of stronglyConnected(arrows)) {
    const members = new Set(component);
    const covered = new Set<string>();
    for (const file of [...component].sort()) {
      if (covered.has(file)) continue;
      const cycle = shortestCycleThrough(file, arrows, members);
      if (cycle === undefined) continue;
      cycle.forEach((member) => covered.add(member));
      const rotated = rotatedToSmallest(cycle);
      cycles.set(rotated.join(" "), rotated);
    }
  }
  return [...cycles.values()].map((cycle) => [...cycle, cycle[0]].join(" → "));
}

/** The files of each strongly connected component (Tarjan), a lone file included. */
function stronglyConnected(arrows: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    lowest.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of arrows.get(file) ?? []) {
      if (!index.has(next)) {
        visit(next);
        lowest.set(file, Math.min(lowest.get(file)!, lowest.get(next)!));
      } else if (onStack.has(next)) {
        lowest.set(file, Math.min(lowest.get(file)!, index.get(next)!));
      }
    }
    if (lowest.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    components.push(component);
  };
  for (const file of arrows.keys()) if (!index.has(file)) visit(file);
  return components;
}

/** The files of a shortest cycle from `start` back to it inside `members` (breadth first), or undefined. */
function shortestCycleThrough(
  start: string,
  arrows: ReadonlyMap<string, ReadonlySet<string>>,
  members: ReadonlySet<string>,
): string[] | undefined {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let at = 0; at < queue.length; at++) {
    const file = queue[at];
    for (const next of arrows.get(file) ?? []) {
      if (next === start) {
        const trail = [file];
        while (trail[0] !== start) trail.unshift(cameFrom.get(trail[0])!);
        return trail;
      }
      if (!members.has(next) || cameFrom.has(next)) continue;
      cameFrom.set(next, file);
      queue.push(next);
    }
  }
  return undefined;
}

const rotatedToSmallest = (cycle: string[]): string[] => {
  const at = cycle.indexOf([...cycle].sort()[0]);
  return [...cycle.slice(at), ...cycle.slice(0, at)];
};
