/**
 * `npm run bench:sender` (issue 23): what one webhook attempt costs the sending process itself —
 * services/webhooks/webhooks.sender.ts's `sendWebhook` with its axios request, signing, opening
 * of the sealed values and response capture, nothing of the database or the dispatcher.
 * `--attempts` attempts, `--in-flight` at a time, to a keep-alive HTTP receiver on 127.0.0.1
 * that runs in a child process (so its CPU is not counted); the figure is this process's CPU
 * (process.cpuUsage, user + system) per attempt, after a warm-up of `--warmup` attempts. The
 * window closes once every attempt's deadline (TIMEOUT_MS) has passed, so that what an attempt
 * leaves to run later (a deadline timer firing) is counted too; the process is otherwise idle then.
 *
 *   node dist/bench/sender-cost.bench.js [--attempts 20000] [--in-flight 50] [--warmup 2000]
 *     [--host 127.0.0.1]
 *
 * `--host localhost` names the receiver by a host name: each attempt's address check then asks
 * the system resolver (getaddrinfo, on libuv's thread pool: its CPU is this process's too).
 *
 * The subscription is a usual one: sealed key and secret, one custom header, no key pair, no
 * rotation under way; its secrets are opened through the worker's `rememberingOpener`, as in
 * production. Run it under `node --cpu-prof` to see where an attempt's CPU goes. Prints its
 * figures; bench/README.md records them by hand.
 */
import { fork } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { readFileSync } from "node:fs";
import {
  newEncryptionKeyEntry,
  parseEncryptionKeys,
  rememberingOpener,
  SecretBox,
} from "../shared/security/secret-box";
import { sendWebhook, type OutgoingWebhook } from "../services/webhooks/webhooks.sender";
import { generateKey, generateSecret } from "../services/webhooks/webhooks.signing";
import { LOOPBACK, positiveInteger } from "./options";

const RECEIVER_FLAG = "--receiver";
/** The attempts' time-out: none is reached; the window waits for it to pass after the last one. */
const TIMEOUT_MS = 5_000;
const log = (line: string) => console.log(`[bench:sender] ${line}`);

/** The child: answers every request 200 with a short body on kept-alive connections, and says its port. */
function runReceiver(): void {
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end("ok"));
  });
  server.listen(0, LOOPBACK, () => process.send?.((server.address() as AddressInfo).port));
  process.on("disconnect", () => process.exit(0));
}

async function startReceiver(): Promise<{ port: number; stop: () => void }> {
  const child = fork(__filename, [RECEIVER_FLAG], { execArgv: [], stdio: "inherit" });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (m) => resolve(Number(m)));
    child.once("exit", (code) => reject(new Error(`the receiver exited (${code})`)));
  });
  return { port, stop: () => child.kill() };
}

/** Sends `count` attempts, `inFlight` at a time; the outcomes counted by kind. */
async function sendMany(
  count: number,
  inFlight: number,
  webhook: (i: number) => OutgoingWebhook,
  send: (w: OutgoingWebhook) => ReturnType<typeof sendWebhook>,
): Promise<Map<string, number>> {
  const kinds = new Map<string, number>();
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const outcome = await send(webhook(next++));
      kinds.set(outcome.kind, (kinds.get(outcome.kind) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return kinds;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      attempts: { type: "string", default: "20000" },
      "in-flight": { type: "string", default: "50" },
      warmup: { type: "string", default: "2000" },
      host: { type: "string", default: LOOPBACK },
    },
    strict: true,
  });
  const attempts = positiveInteger("attempts", values.attempts, 1);
  const inFlight = positiveInteger("in-flight", values["in-flight"], 1);
  const warmup = positiveInteger("warmup", values.warmup, 0);

  const box = new SecretBox(parseEncryptionKeys([newEncryptionKeyEntry("bench")], "keys").keys);
  const receiver = await startReceiver();
  const stored = {
    url: `http://${values.host}:${receiver.port}/hooks`,
    event: "sales_order_validated",
    key: box.seal(generateKey()),
    secret: box.seal(generateSecret()),
    customHeaders: box.seal(JSON.stringify({ Authorization: "Bearer bench-token" })),
  };
  // Each attempt its own id and body text, as the dispatcher's rows are (fresh strings).
  const webhook = (i: number): OutgoingWebhook => ({
    ...stored,
    webhookId: `msg_bench_${i}`,
    body: JSON.stringify({ id: i, code: `ORD-20261127-${String(i).padStart(6, "0")}`, total: "12.50" }),
  });
  const opts = { timeoutMs: TIMEOUT_MS, allowInsecure: true, secrets: rememberingOpener(box) };
  const send = (w: OutgoingWebhook) => sendWebhook(w, opts);
  const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  try {
    log(`load average ${loadAverage()}; warm-up: ${warmup} attempts`);
    await sendMany(warmup, inFlight, webhook, send);
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const kinds = await sendMany(attempts, inFlight, webhook, send);
    const wallMs = performance.now() - started;
    await new Promise((r) => setTimeout(r, TIMEOUT_MS + 500));
    const cpu = process.cpuUsage(cpuBefore);
    const delivered = kinds.get("delivered") ?? 0;
    if (delivered !== attempts) throw new Error(`not every attempt was delivered: ${JSON.stringify([...kinds])}`);
    const perAttempt = (us: number) => (us / attempts).toFixed(1);
    log(
      `${attempts} attempts, ${inFlight} in flight: ${perAttempt(cpu.user + cpu.system)} µs of CPU per attempt ` +
        `(user ${perAttempt(cpu.user)}, system ${perAttempt(cpu.system)}), ${Math.round(attempts / (wallMs / 1000))} attempts/s; ` +
        `load average ${loadAverage()}`,
    );
  } finally {
    receiver.stop();
  }
}

if (process.argv.includes(RECEIVER_FLAG)) runReceiver();
else
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
