/**
 * One process per embedded data folder. PGlite opens its folder without any lock of its own, so
 * a second `npm start` or a CLI command run beside a live one would write to the same files and
 * corrupt them. The first process writes its pid in `<folder>/order-intake.pid` (created
 * exclusively, removed on exit); another finding the file refuses to open the folder while that
 * pid lives, and takes a stale one over (the holder crashed or was killed with SIGKILL).
 */
import fs from "node:fs";
import path from "node:path";

export const LOCK_FILE = "order-intake.pid";

export class DataFolderInUseError extends Error {
  constructor(
    readonly folder: string,
    readonly holderPid: number,
  ) {
    super(
      `The data folder ${folder} is in use by process ${holderPid} (another \`npm start\` or CLI command): ` +
        `stop it first, or give this one its own folder (DATABASE_URL=pglite://<another folder>).`,
    );
  }
}

const held = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the pid exists but belongs to another user; only ESRCH means it is gone.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readHolder(file: string): number | null {
  try {
    const pid = Number(fs.readFileSync(file, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function releaseOnExit(file: string): void {
  process.once("exit", () => {
    if (readHolder(file) === process.pid) fs.rmSync(file, { force: true });
  });
}

/** Holds `folder` for this process until it exits; throws DataFolderInUseError when a live process holds it. */
export function holdDataFolder(folder: string): void {
  const file = path.join(folder, LOCK_FILE);
  if (held.has(file)) return;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.writeFileSync(file, `${process.pid}\n`, { flag: "wx" });
      held.add(file);
      releaseOnExit(file);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = readHolder(file);
    if (holder !== null && holder !== process.pid && isAlive(holder)) throw new DataFolderInUseError(folder, holder);
    // A stale file (dead holder, or unreadable): remove it and try once more.
    fs.rmSync(file, { force: true });
  }
  throw new DataFolderInUseError(folder, readHolder(file) ?? 0);
}
