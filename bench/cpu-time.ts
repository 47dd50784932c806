/**
 * Where the CPU goes during the measured window: the user + system time each process spent
 * (from /proc/<pid>/stat), divided by the number of requests — milliseconds of CPU per order.
 * On a machine with few cores the services, PostgreSQL and the load generator share the same
 * CPUs, so this is the profile that explains the throughput.
 *
 * PostgreSQL's share is the backends connected to the target's own database (found in
 * pg_stat_activity), so other databases' work on the same server is not counted.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";

/** Kernel clock ticks per second (`getconf CLK_TCK`, 100 on Linux almost everywhere). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcessStat {
  command: string;
  cpuMs: number;
}

/** The command name and utime + stime (ms) of a process, or null once it is gone. */
function processStat(pid: number): ProcessStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: fields count from the last ')'.
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    return {
      command: stat.slice(stat.indexOf("(") + 1, close),
      cpuMs: ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1000,
    };
  } catch {
    return null;
  }
}

/** Every process of the machine now. */
function allProcesses(): Map<number, ProcessStat> {
  const all = new Map<number, ProcessStat>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = processStat(Number(entry));
    if (stat) all.set(Number(entry), stat);
  }
  return all;
}

/**
 * CPU time the whole machine spent busy (every core, every process, the kernel), in ms: what
 * is left after the measured processes is NATS, other work on the machine and the kernel.
 */
export function machineBusyMs(): number {
  const [, ...ticks] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const [user, nice, system, , , irq, softirq, steal] = ticks;
  return ((user + nice + system + irq + softirq + (steal ?? 0)) / TICKS_PER_SECOND) * 1000;
}

/** The processes running `command` whose command line mentions `argument` (e.g. the NATS server on port 4222). */
export function pidsOfCommand(command: string, argument: string): number[] {
  return [...allProcesses()].flatMap(([pid, stat]) => {
    if (stat.command !== command) return [];
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(argument) ? [pid] : [];
    } catch {
      return [];
    }
  });
}

/** The PostgreSQL backends serving one database. */
export async function backendPids(serverUrl: string, database: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [database],
    );
    return rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
}

export interface Measured {
  name: string;
  pids: () => number[] | Promise<number[]>;
}

export interface CpuShare {
  name: string;
  cpuMs: number;
}

/** The name under which `finish` reports the whole machine's busy time. */
export const WHOLE_MACHINE = "whole machine";
/** The prefix of the busiest processes outside the measured ones (NATS, other work on the machine). */
export const OTHER_PREFIX = "other: ";
const OTHERS_REPORTED = 4;

/**
 * CPU time of each named group of processes between `start` and `finish`, of the whole machine,
 * and of the busiest other commands (so that NATS, or someone else's work, is named).
 */
export class CpuWindow {
  private readonly machineBefore = machineBusyMs();
  private readonly processesBefore = allProcesses();

  private constructor(private readonly groups: Measured[]) {}

  static start(groups: Measured[]): CpuWindow {
    return new CpuWindow(groups);
  }

  /** A process that appeared during the window (a new pool connection) counts from zero. */
  async finish(): Promise<CpuShare[]> {
    const now = allProcesses();
    const spent = (pid: number) => (now.get(pid)?.cpuMs ?? 0) - (this.processesBefore.get(pid)?.cpuMs ?? 0);
    const shares: CpuShare[] = [];
    const measured = new Set<number>();
    for (const g of this.groups) {
      const pids = (await g.pids()).filter((pid) => now.has(pid));
      pids.forEach((pid) => measured.add(pid));
      shares.push({ name: g.name, cpuMs: Math.round(pids.reduce((sum, pid) => sum + spent(pid), 0)) });
    }
    const byCommand = new Map<string, number>();
    for (const [pid, stat] of now) {
      if (!measured.has(pid)) byCommand.set(stat.command, (byCommand.get(stat.command) ?? 0) + spent(pid));
    }
    const others = [...byCommand.entries()].sort((a, b) => b[1] - a[1]).slice(0, OTHERS_REPORTED);
    shares.push(...others.map(([command, ms]) => ({ name: `${OTHER_PREFIX}${command}`, cpuMs: Math.round(ms) })));
    shares.push({ name: WHOLE_MACHINE, cpuMs: Math.round(machineBusyMs() - this.machineBefore) });
    return shares;
  }
}

/**
 * What a deployment is made of, for a CpuWindow: each of its processes, PostgreSQL's backends
 * for its database, the NATS server (which may be shared: another deployment's traffic would be
 * counted too), and this process (the load generator).
 */
export function deploymentGroups(
  deployment: { processes: { name: string; pid: number }[]; databaseName?: string; natsPort?: string },
  postgresUrl: string,
): Measured[] {
  const groups: Measured[] = deployment.processes.map((p) => ({ name: p.name, pids: () => [p.pid] }));
  const database = deployment.databaseName;
  if (database) groups.push({ name: "postgres", pids: () => backendPids(postgresUrl, database) });
  const natsPort = deployment.natsPort;
  if (natsPort) groups.push({ name: "nats-server", pids: () => pidsOfCommand("nats-server", natsPort) });
  groups.push({ name: "load generator", pids: () => [process.pid] });
  return groups;
}

/** Each share as ms of CPU per unit of work (an order, a delivery) and as cores busy on average over `wallMs`. */
export function perUnit(
  shares: CpuShare[],
  units: number,
  wallMs: number,
): { name: string; msPerUnit: number; cores: number }[] {
  const n = Math.max(1, units);
  const wall = Math.max(1, wallMs);
  return shares.map((s) => ({
    name: s.name,
    msPerUnit: Math.round((s.cpuMs / n) * 100) / 100,
    cores: Math.round((s.cpuMs / wall) * 100) / 100,
  }));
}
