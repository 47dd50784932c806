/**
 * Peak resident memory of the processes under test. Linux keeps each process's high-water mark
 * (`VmHWM` in /proc/<pid>/status, over its whole life: start, migrations, seeding and load);
 * it is read every second and once more at the end, so a process that dies still has a figure.
 */
import { readFileSync } from "node:fs";
import type { BenchProcess } from "./processes";

export interface ProcessMemory {
  name: string;
  pid: number;
  peakRssMB: number;
}

const SAMPLE_EVERY_MS = 1_000;

function highWaterMarkKiB(pid: number): number | null {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : null;
  } catch {
    return null; // gone already: the last sample stands
  }
}

export class PeakRss {
  private readonly peaks = new Map<BenchProcess, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly processes: BenchProcess[]) {
    this.timer = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
    // A sampler never keeps the process alive: a run that fails before finish() still exits.
    this.timer.unref();
    this.sample();
  }

  private sample(): void {
    for (const p of this.processes) {
      const kib = p.alive ? highWaterMarkKiB(p.pid) : null;
      if (kib !== null) this.peaks.set(p, Math.max(kib, this.peaks.get(p) ?? 0));
    }
  }

  /** Call before stopping the processes. */
  finish(): ProcessMemory[] {
    this.sample();
    clearInterval(this.timer);
    return this.processes.map((p) => ({
      name: p.name,
      pid: p.pid,
      peakRssMB: Math.round(((this.peaks.get(p) ?? 0) / 1024) * 10) / 10,
    }));
  }
}
