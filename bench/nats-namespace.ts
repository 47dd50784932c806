/**
 * The distributed target shares the machine's NATS server with whatever else runs there. It runs
 * in a Moleculer namespace of its own (NAMESPACE, one per run), so no other deployment takes part
 * in its calls and its JetStream streams (`<namespace>_<channel>`) are its own; at the end they
 * are deleted, so a run leaves nothing on the server.
 */
import { connect } from "nats";

/** `orders-bench-<run>`, `webhooks-bench-<run>`: which benchmark, which run. */
export const benchNamespace = (runId: string, bench = "orders") => `${bench}-bench-${runId}`;

/** Deletes the JetStream streams of a namespace; resolves to their names. */
export async function deleteNamespaceStreams(natsUrl: string, namespace: string): Promise<string[]> {
  const nc = await connect({ servers: natsUrl, name: "orders-benchmark-cleanup" });
  try {
    const jsm = await nc.jetstreamManager();
    const names: string[] = [];
    for await (const name of jsm.streams.names()) if (name.startsWith(`${namespace}_`)) names.push(name);
    for (const name of names) await jsm.streams.delete(name);
    return names;
  } finally {
    await nc.close();
  }
}

export interface StreamSize {
  name: string;
  messages: number;
  bytes: number;
}

/** The JetStream streams of a namespace and what they hold now (the soak follows them). */
export async function namespaceStreamSizes(natsUrl: string, namespace: string): Promise<StreamSize[]> {
  const nc = await connect({ servers: natsUrl, name: "soak-benchmark-streams" });
  try {
    const jsm = await nc.jetstreamManager();
    const sizes: StreamSize[] = [];
    for await (const info of jsm.streams.list())
      if (info.config.name.startsWith(`${namespace}_`))
        sizes.push({ name: info.config.name, messages: info.state.messages, bytes: info.state.bytes });
    return sizes;
  } finally {
    await nc.close();
  }
}

/** `NATS 2.9.10 (JetStream)`, for the results' machine section. */
export async function natsServerVersion(natsUrl: string): Promise<string> {
  const nc = await connect({ servers: natsUrl, name: "orders-benchmark-probe" });
  try {
    return `NATS ${nc.info?.version ?? "unknown"}${nc.info?.jetstream ? " (JetStream)" : ""}`;
  } finally {
    await nc.close();
  }
}
