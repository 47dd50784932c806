/**
 * What a result is worth comparing with: the machine it ran on (cores, memory, Node, PostgreSQL
 * and NATS versions) and the code it measured (commit, and whether the tree had changes).
 */
import { execFileSync } from "node:child_process";
import os from "node:os";
import { serverVersion } from "./databases";
import { natsServerVersion } from "./nats-namespace";
import { ROOT } from "./processes";

export interface MachineDescription {
  cores: number;
  cpus: string;
  memoryGB: number;
  os: string;
  node: string;
  postgres: string;
  nats: string;
}

export interface CodeVersion {
  commit: string;
  uncommittedChanges: boolean;
}

export function codeVersion(): CodeVersion {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
  try {
    return { commit: git("rev-parse", "--short", "HEAD"), uncommittedChanges: git("status", "--porcelain").length > 0 };
  } catch {
    return { commit: "unknown", uncommittedChanges: true };
  }
}

/** The servers are asked for their versions only when the run uses them. */
export async function describeMachine(uses: { postgresUrl?: string; natsUrl?: string }): Promise<MachineDescription> {
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpus: `${cpus.length} × ${cpus[0]?.model.trim() ?? "unknown CPU"}`,
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.versions.node,
    postgres: uses.postgresUrl ? await serverVersion(uses.postgresUrl) : "not used",
    nats: uses.natsUrl ? await natsServerVersion(uses.natsUrl) : "not used",
  };
}
