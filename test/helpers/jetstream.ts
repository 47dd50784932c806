/** Removes JetStream streams a test created on a shared NATS server. */
import { connect } from "nats";

/** Deletes every stream whose name starts with `prefix`; resolves to their names. */
export async function deleteStreams(natsUrl: string, prefix: string): Promise<string[]> {
  const nc = await connect({ servers: natsUrl, name: "oi-test-cleanup" });
  try {
    const jsm = await nc.jetstreamManager();
    const names: string[] = [];
    for await (const name of jsm.streams.names()) if (name.startsWith(prefix)) names.push(name);
    for (const name of names) await jsm.streams.delete(name);
    return names;
  } finally {
    await nc.close();
  }
}
