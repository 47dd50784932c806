/**
 * The streams of the event contract made to match the settings (shared/messaging/jetstream-streams.ts),
 * against a stand-in for NATS's stream API that answers as nats-server 2.9 does.
 */
import type { JetStreamManager, StreamConfig } from "nats";
import {
  ensureStreams,
  replicaCandidates,
  StreamSetupError,
  type StreamSpec,
} from "../../shared/messaging/jetstream-streams";
import { isSettlingJetStream } from "../../shared/messaging/jetstream-settling";

const DAY_NS = 24 * 3600 * 1e9;
const spec = (name: string): StreamSpec => ({ name, subjects: [name.replace("_", ".")], maxAgeNs: 7 * DAY_NS });
const SPECS = [spec("ns_order-created"), spec("ns_order-validated")];

/** An API error as nats.js raises it. */
function apiError(code: number, errCode: number, description: string): Error {
  return Object.assign(new Error(description), {
    code: String(code),
    api_error: { code, err_code: errCode, description },
  });
}

interface FakeNats {
  jsm: JetStreamManager;
  streams: Map<string, Partial<StreamConfig>>;
  calls: string[];
}

/** `jetStreamServers`: how many replicas NATS can place; `refuseUpdate`: the answer to any update. */
function fakeNats(jetStreamServers: number, options: { clustered?: boolean; refuseUpdate?: Error } = {}): FakeNats {
  const streams = new Map<string, Partial<StreamConfig>>();
  const calls: string[] = [];
  const place = (cfg: Partial<StreamConfig>) => {
    const replicas = cfg.num_replicas ?? 1;
    if (replicas > 1 && options.clustered === false)
      throw apiError(500, 10074, "replicas > 1 not supported in non-clustered mode");
    if (replicas > jetStreamServers) throw apiError(400, 10005, "no suitable peers for placement");
  };
  const jsm = {
    streams: {
      async info(name: string) {
        const config = streams.get(name);
        if (!config) throw apiError(404, 10059, "stream not found");
        return { config: { ...config } };
      },
      async add(cfg: Partial<StreamConfig>) {
        calls.push(`add ${cfg.name} R${cfg.num_replicas}`);
        place(cfg);
        streams.set(cfg.name!, { ...cfg });
        return { config: cfg };
      },
      async update(name: string, cfg: Partial<StreamConfig>) {
        calls.push(`update ${name} R${cfg.num_replicas}`);
        if (options.refuseUpdate) throw options.refuseUpdate;
        place(cfg);
        streams.set(name, { ...cfg });
        return { config: cfg };
      },
    },
  } as unknown as JetStreamManager;
  return { jsm, streams, calls };
}

describe("JetStream streams", () => {
  it("when the replicas are auto, then a single server gets 1 and a cluster 3, 2 and 1 in that order", () => {
    expect(replicaCandidates("auto", {})).toEqual([1]);
    expect(replicaCandidates("auto", { cluster: "nats" })).toEqual([3, 2, 1]);
    expect(replicaCandidates(2, { cluster: "nats" })).toEqual([2]);
  });

  it("when a stream is missing on a three-node cluster, then it is created with 3 replicas and the creation is logged", async () => {
    const nats = fakeNats(3);
    const lines: string[] = [];
    await ensureStreams(nats.jsm, SPECS, "auto", { cluster: "nats" }, (line) => lines.push(line));
    expect(nats.calls).toEqual(["add ns_order-created R3", "add ns_order-validated R3"]);
    expect(nats.streams.get("ns_order-created")).toEqual({
      name: "ns_order-created",
      subjects: ["ns.order-created"],
      max_age: 7 * DAY_NS,
      num_replicas: 3,
    });
    expect(lines).toEqual([
      'JetStream stream "ns_order-created" created with 3 replica(s).',
      'JetStream stream "ns_order-validated" created with 3 replica(s).',
    ]);
  });

  it("when the cluster has two JetStream servers, then auto steps down to 2 once, says so, and the next stream starts there", async () => {
    const nats = fakeNats(2);
    const lines: string[] = [];
    await ensureStreams(nats.jsm, SPECS, "auto", { cluster: "nats" }, (line) => lines.push(line));
    expect(nats.calls).toEqual(["add ns_order-created R3", "add ns_order-created R2", "add ns_order-validated R2"]);
    expect(lines[0]).toBe(
      'JetStream stream "ns_order-created" created with 2 replica(s); NATS refused more: 3: no suitable peers for placement.',
    );
  });

  it("when a stream exists with one replica and another max age, then it is updated in place, naming each difference", async () => {
    const nats = fakeNats(3);
    nats.streams.set("ns_order-created", {
      name: "ns_order-created",
      subjects: ["ns.order-created"],
      max_age: DAY_NS,
      num_replicas: 1,
      max_bytes: 1_000_000,
    });
    const lines: string[] = [];
    await ensureStreams(nats.jsm, SPECS.slice(0, 1), "auto", { cluster: "nats" }, (line) => lines.push(line));
    expect(nats.streams.get("ns_order-created")).toEqual({
      name: "ns_order-created",
      subjects: ["ns.order-created"],
      max_age: 7 * DAY_NS,
      num_replicas: 3,
      // What the project does not decide is kept as the operator set it.
      max_bytes: 1_000_000,
    });
    expect(lines).toEqual([
      'JetStream stream "ns_order-created" updated (max_age: 86400 s → 604800 s, replicas: 1 → 3).',
    ]);
  });

  it("when a stream already matches, then it is neither created nor updated, and nothing is logged", async () => {
    const nats = fakeNats(3);
    await ensureStreams(nats.jsm, SPECS, "auto", { cluster: "nats" }, () => undefined);
    nats.calls.length = 0;
    const lines: string[] = [];
    await ensureStreams(nats.jsm, SPECS, "auto", { cluster: "nats" }, (line) => lines.push(line));
    expect({ calls: nats.calls, lines }).toEqual({ calls: [], lines: [] });
  });

  it("when an explicit replica count is more than NATS can place, then the start fails naming JETSTREAM_REPLICAS, without trying fewer", async () => {
    const nats = fakeNats(1, { clustered: false });
    const ensuring = ensureStreams(nats.jsm, SPECS, 3, {}, () => undefined);
    await expect(ensuring).rejects.toThrow(StreamSetupError);
    await expect(ensuring).rejects.toThrow(
      /"ns_order-created".*JETSTREAM_REPLICAS.*not supported in non-clustered mode/,
    );
    expect(nats.calls).toEqual(["add ns_order-created R3"]);
  });

  it("when NATS refuses to update a stream that differs, then the start fails naming the stream, the difference and NATS's answer", async () => {
    const nats = fakeNats(3, {
      refuseUpdate: apiError(500, 10052, "stream configuration update can not change subjects"),
    });
    nats.streams.set("ns_order-created", {
      name: "ns_order-created",
      subjects: ["ns.order-created"],
      max_age: 7 * DAY_NS,
      num_replicas: 1,
    });
    await expect(ensureStreams(nats.jsm, SPECS, "auto", { cluster: "nats" }, () => undefined)).rejects.toThrow(
      'JetStream stream "ns_order-created" exists with other settings (replicas: 1 → 3) and NATS refused to update it: stream configuration update can not change subjects',
    );
  });

  it("when asking NATS about a stream fails otherwise than 'not found', then that error stops the start as it is", async () => {
    const nats = fakeNats(3);
    const timeout = Object.assign(new Error("TIMEOUT"), { code: "TIMEOUT" });
    (nats.jsm.streams as unknown as { info: () => Promise<never> }).info = () => Promise.reject(timeout);
    await expect(ensureStreams(nats.jsm, SPECS, "auto", { cluster: "nats" }, () => undefined)).rejects.toBe(timeout);
  });

  it("when creating a stream goes unanswered (a cluster electing leaders), then that error reaches the start's retry as it is, not as a refusal", async () => {
    const nats = fakeNats(3);
    const timeout = Object.assign(new Error("TIMEOUT"), { code: "TIMEOUT" });
    (nats.jsm.streams as unknown as { add: () => Promise<never> }).add = () => Promise.reject(timeout);
    const failure = await ensureStreams(nats.jsm, SPECS, "auto", { cluster: "nats" }, () => undefined).catch((e) => e);
    expect(failure).toBe(timeout);
    expect(isSettlingJetStream(failure)).toBe(true);
  });
});
