/**
 * With `--cpu-prof`, every process under test runs with Node's V8 sampling profiler and writes
 * a .cpuprofile when it stops. This reads them back and says, per process, which package
 * (moleculer, knex, pg, nats, …) or file of this project its CPU went to — the first question
 * when a hop is expensive.
 * Open a profile itself in Chrome DevTools (Performance → Load profile) for the call trees.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./processes";

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
}

export interface ProfileShare {
  category: string;
  percent: number;
}

export interface ProcessProfile {
  process: string;
  file: string;
  /** Busy (non-idle) sampled time over the process's whole life, in ms. */
  busyMs: number;
  top: ProfileShare[];
}

const TOP = 12;

/** `moleculer`, `@moleculer/channels`, `project: services/orders/orders.intake.js`, or null for Node/V8 code. */
export function ownerOf(node: ProfileNode): string | null {
  const { url } = node.callFrame;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1];
  const own = url.indexOf("/dist/");
  if (own >= 0 && url.startsWith(`file://${ROOT}`)) return `project: ${url.slice(own + "/dist/".length)}`;
  return null;
}

/**
 * Each sample is charged to the nearest package or project file on its stack: JSON.parse
 * called by moleculer's serializer is moleculer's, a socket write from pg is pg's. What no
 * package called (the event loop, garbage collection) keeps its V8/Node name.
 */
function summarize(profile: CpuProfile): { busyMs: number; top: ProfileShare[] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const chargedTo = (node: ProfileNode): string => {
    for (let at: ProfileNode | undefined = node; at; at = byId.get(parent.get(at.id) ?? -1)) {
      const owner = ownerOf(at);
      if (owner) return owner;
    }
    const { functionName, url } = node.callFrame;
    return functionName.startsWith("(")
      ? functionName
      : url.startsWith("node:")
        ? "Node.js internals, called by no package"
        : "V8 built-ins, called by no package";
  };

  const hits = new Map<string, number>();
  let busy = 0;
  let all = 0;
  for (const node of profile.nodes) {
    const n = node.hitCount ?? 0;
    all += n;
    if (n === 0 || node.callFrame.functionName === "(idle)") continue;
    busy += n;
    const owner = chargedTo(node);
    hits.set(owner, (hits.get(owner) ?? 0) + n);
  }
  const msPerSample = all > 0 ? (profile.endTime - profile.startTime) / 1000 / all : 0;
  const top = [...hits.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([category, n]) => ({ category, percent: Math.round((n / Math.max(1, busy)) * 1000) / 10 }));
  return { busyMs: Math.round(busy * msPerSample), top };
}

/** Node names its profiles `CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile`. */
const PID_IN_NAME = /^CPU\.\d+\.\d+\.(\d+)\.\d+\.\d+\.cpuprofile$/;

/** The profiles in `dir` written by the named processes (pid → name). */
export function summarizeProfiles(dir: string, names: Map<number, string>): ProcessProfile[] {
  return readdirSync(dir).flatMap((file) => {
    const pid = Number(PID_IN_NAME.exec(file)?.[1]);
    const name = names.get(pid);
    if (!name) return [];
    const profile = JSON.parse(readFileSync(path.join(dir, file), "utf8")) as CpuProfile;
    return [{ process: name, file: path.join(dir, file), ...summarize(profile) }];
  });
}

export function profileReport(profiles: ProcessProfile[]): string {
  return profiles
    .map((p) =>
      [
        `${p.process}: ${p.busyMs} ms busy (${p.file})`,
        ...p.top.map((s) => `  ${String(s.percent).padStart(5)} %  ${s.category}`),
      ].join("\n"),
    )
    .join("\n\n");
}
