/**
 * The embedded fallback's test databases: each a PGlite data folder of its own, copied from one
 * folder initialised once per run. PGlite started in memory runs initdb at every start (about 2 s
 * of CPU, and a test run starts over a hundred); opened on an initialised folder it starts in a
 * tenth of that, and copying the 40 MB folder takes a few tens of milliseconds. The folders carry
 * the run's id (test/helpers/test-run.ts): the global teardown removes what a test left behind.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { initialiseDataFolder } from "../../shared/database/db";
import { pgliteFolderPrefix } from "./test-run";

/** Set by the global setup for the workers: the run's initialised folder. */
const TEMPLATE_VARIABLE = "OI_TEST_PGLITE_TEMPLATE";

const templateFolder = (run?: string) => path.join(os.tmpdir(), `${pgliteFolderPrefix(run)}template`);

/** For the global setup: initdb once for the run, as the product's first start does it. */
export function preparePgliteTemplate(): void {
  const folder = templateFolder();
  mkdirSync(folder, { recursive: true });
  initialiseDataFolder(folder);
  process.env[TEMPLATE_VARIABLE] = folder;
}

/**
 * A new data folder, initialised, for one test database; null outside a run's global setup (a
 * test file run on its own then uses PGlite in memory).
 */
export function copyPgliteTemplate(): string | null {
  const template = process.env[TEMPLATE_VARIABLE];
  if (!template || !existsSync(template)) return null;
  const folder = mkdtempSync(path.join(os.tmpdir(), pgliteFolderPrefix()));
  cpSync(template, folder, { recursive: true });
  return folder;
}

export function removePgliteFolder(folder: string): void {
  rmSync(folder, { recursive: true, force: true });
}

/** For the global teardown: the run's template goes, whatever happened. */
export function removePgliteTemplate(run: string): void {
  removePgliteFolder(templateFolder(run));
}

/** For the global teardown: the run's data folders that are still there. */
export function pgliteFolders(run: string): string[] {
  const prefix = pgliteFolderPrefix(run);
  return readdirSync(os.tmpdir())
    .filter((name) => name.startsWith(prefix))
    .map((name) => path.join(os.tmpdir(), name));
}
