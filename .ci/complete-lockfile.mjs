#!/usr/bin/env node
// The npm registry these machines reach serves only the Linux builds of packages with
// per-platform binaries (@swc/core-*, @unrs/resolver-binding-*). `npm install` then leaves the
// other platforms' optional packages out of package-lock.json, and `npm ci` refuses the lock as
// "not in sync". This adds each missing optional package with the version its parent asks for
// and the os/cpu/libc its name states, as a lock made against the full registry has them;
// `npm ci` skips them on a platform they do not match, without fetching anything.
// Run it after any `npm install` here: node .ci/complete-lockfile.mjs
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

const LOCK = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(LOCK, "utf8"));
const packages = lock.packages;

const OS = {
  darwin: "darwin",
  linux: "linux",
  win32: "win32",
  android: "android",
  freebsd: "freebsd",
  openharmony: "openharmony",
};
const CPU = {
  arm64: "arm64",
  x64: "x64",
  ia32: "ia32",
  arm: "arm",
  ppc64: "ppc64",
  s390x: "s390x",
  riscv64: "riscv64",
  loong64: "loong64",
};

/** os, cpu and libc from a name such as @swc/core-linux-arm-gnueabihf or ...-win32-x64-msvc. */
function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = parts.find((p) => OS[p]);
  const cpu = parts.find((p) => CPU[p]);
  if (!os || !cpu) return null;
  const tail = parts.at(-1);
  const libc =
    os === "linux" ? (tail.startsWith("musl") ? ["musl"] : tail.startsWith("gnu") ? ["glibc"] : undefined) : undefined;
  return { os: [os], cpu: [cpu], ...(libc ? { libc } : {}) };
}

let added = 0;
for (const entry of Object.values(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (packages[key]) continue;
    const platform = platformOf(name);
    if (!platform) continue;
    packages[key] = { version, ...platform, ...(entry.dev ? { dev: true } : {}), optional: true };
    added += 1;
  }
}

const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
);
lock.packages = sorted;
writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: ${added} optional platform package(s) recorded`);
if (process.argv.includes("--check"))
  execFileSync("npm", ["ci", "--dry-run", "--ignore-scripts"], { stdio: "inherit" });
