/** Lists and removes JetStream streams a test created on a shared NATS server. */
import { connect, type JetStreamManager } from "nats";

async function withManager<T>(natsUrl: string, use: (jsm: JetStreamManager) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: natsUrl, name: "oi-test-cleanup" });
  try {
    return await use(await nc.jetstreamManager());
  } finally {
    await nc.close();
  }
}

async function namesStartingWith(jsm: JetStreamManager, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const name of jsm.streams.names()) if (name.startsWith(prefix)) names.push(name);
  return names;
}

/** The streams whose name starts with `prefix`. */
export function streamNames(natsUrl: string, prefix: string): Promise<string[]> {
  return withManager(natsUrl, (jsm) => namesStartingWith(jsm, prefix));
}

/** Deletes every stream whose name starts with `prefix`; resolves to their names. */
export function deleteStreams(natsUrl: string, prefix: string): Promise<string[]> {
  return withManager(natsUrl, async (jsm) => {
    const names = await namesStartingWith(jsm, prefix);
    for (const name of names) await jsm.streams.delete(name);
    return names;
  });
}
