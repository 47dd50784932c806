/**
 * The embedded data folder's pid file: a live holder's folder is refused with a message naming
 * the folder and the pid; a dead holder's file is taken over; holding twice in one process is fine.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DataFolderInUseError, holdDataFolder, LOCK_FILE } from "../../shared/database/data-folder-lock";

const folders: string[] = [];
function folderHeldBy(pid: number | null): string {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "oi-lock-"));
  folders.push(folder);
  if (pid !== null) fs.writeFileSync(path.join(folder, LOCK_FILE), `${pid}\n`);
  return folder;
}
afterAll(() => folders.forEach((f) => fs.rmSync(f, { recursive: true, force: true })));

const lockHolder = (folder: string) => Number(fs.readFileSync(path.join(folder, LOCK_FILE), "utf8"));

describe("when a process opens an embedded data folder", () => {
  it("then a free folder is held with this process's pid, and holding it again is allowed", () => {
    const folder = folderHeldBy(null);
    holdDataFolder(folder);
    holdDataFolder(folder);
    expect(lockHolder(folder)).toBe(process.pid);
  });

  it("then a folder a live process holds is refused, naming the folder and that pid", () => {
    const folder = folderHeldBy(process.ppid);
    expect(() => holdDataFolder(folder)).toThrow(DataFolderInUseError);
    expect(() => holdDataFolder(folder)).toThrow(`The data folder ${folder} is in use by process ${process.ppid}`);
    expect(lockHolder(folder)).toBe(process.ppid);
  });

  it("then a folder whose holder is dead is taken over", () => {
    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    const folder = folderHeldBy(dead);
    holdDataFolder(folder);
    expect(lockHolder(folder)).toBe(process.pid);
  });
});
