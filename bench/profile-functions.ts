/**
 * The functions a profiled process spent its own time in (self time: the samples taken while the
 * function itself ran, not its callees), with the package or project file each belongs to, and
 * the same self time summed per package. Where profile-summary.ts says "moleculer 11 %", this
 * says which functions of moleculer, and what V8 and Node did for whom.
 *
 *   node dist/bench/profile-functions.js <file.cpuprofile> [--top 25]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ownerOf, type CpuProfile } from "./profile-summary";

const { values, positionals } = parseArgs({
  options: { top: { type: "string", default: "25" } },
  allowPositionals: true,
  strict: true,
});
if (positionals.length !== 1) {
  console.error("usage: profile-functions.js <file.cpuprofile> [--top 25]");
  process.exit(2);
}
const top = Number(values.top);
const profile = JSON.parse(readFileSync(positionals[0], "utf8")) as CpuProfile;

const selfHits = new Map<string, number>();
const byOwner = new Map<string, number>();
let busy = 0;
for (const node of profile.nodes) {
  const n = node.hitCount ?? 0;
  const { functionName, url } = node.callFrame;
  if (n === 0 || functionName === "(idle)") continue;
  busy += n;
  const owner = ownerOf(node) ?? (url.startsWith("node:") ? "Node.js" : url ? url : "V8");
  const key = `${functionName || "(anonymous)"} — ${owner}`;
  selfHits.set(key, (selfHits.get(key) ?? 0) + n);
  byOwner.set(owner, (byOwner.get(owner) ?? 0) + n);
}
const share = (n: number) => `${((n / Math.max(1, busy)) * 100).toFixed(1).padStart(5)} %`;
const list = (m: Map<string, number>) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, n]) => `  ${share(n)}  ${name}`)
    .join("\n");
console.log(
  `self time by function (of ${busy} busy samples):\n${list(selfHits)}\n\nself time by owner:\n${list(byOwner)}`,
);
