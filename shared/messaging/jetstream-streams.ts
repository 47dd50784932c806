/**
 * The JetStream streams of the event contract, made to match this deployment's settings each
 * time a process connects (shared/messaging/channel-adapters.ts): created when missing, updated
 * in place when they exist with other settings, and a start that fails, naming the difference,
 * when NATS refuses. A stream is never kept silently as it was.
 *
 * Replicas: a stream with one replica lives on one NATS node, and every webhook stops for as
 * long as that node is away (for good if its volume is lost). JETSTREAM_REPLICAS=auto asks for
 * three on a NATS cluster (the server's INFO names its cluster) and steps down when NATS answers
 * that the cluster has fewer JetStream servers; one on a single server. Durable consumers are
 * created without a replica count of their own, so NATS keeps each on as many replicas as its
 * stream, and scales them with it.
 */
import type { JetStreamManager, StreamConfig, StreamInfo } from "nats";
import { isSettlingJetStream } from "./jetstream-settling";

/** JETSTREAM_REPLICAS: "auto", or exactly that many (1 to 5). */
export type ReplicaSetting = "auto" | number;

/** What this project decides of a stream; NATS's defaults (or an operator's) hold for the rest. */
export interface StreamSpec {
  name: string;
  subjects: string[];
  maxAgeNs: number;
}

/** Replicas of a stream on a cluster by default: its messages outlive any one node lost. */
export const AUTO_CLUSTER_REPLICAS = 3;

/**
 * NATS's answers when a stream cannot have that many replicas: "insufficient resources", "no
 * suitable peers for placement", and a single server's "replicas > 1 not supported in
 * non-clustered mode".
 */
const PLACEMENT_REFUSED = /insufficient resources|no suitable peers|not supported in non-clustered mode/i;

/** A stream that could not be made to match the settings: the start fails with this message. */
export class StreamSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StreamSetupError";
  }
}

/** The server a process connected to: clustered when its INFO names a cluster. */
export interface ServerFacts {
  cluster?: string;
}

/** The replica counts to try, best first: "auto" steps down from three on a cluster. */
export function replicaCandidates(setting: ReplicaSetting, server: ServerFacts): number[] {
  if (setting !== "auto") return [setting];
  if (!server.cluster) return [1];
  return Array.from({ length: AUTO_CLUSTER_REPLICAS }, (_, i) => AUTO_CLUSTER_REPLICAS - i);
}

type Managed = Pick<StreamConfig, "subjects" | "max_age" | "num_replicas">;

/** The settings of `existing` that differ from `wanted`, as "name: theirs → ours". */
export function streamDifferences(existing: Partial<StreamConfig>, wanted: Managed): string[] {
  const differences: string[] = [];
  const subjects = (s: string[] | undefined) => [...(s ?? [])].sort().join(",");
  if (subjects(existing.subjects) !== subjects(wanted.subjects))
    differences.push(`subjects: ${subjects(existing.subjects)} → ${subjects(wanted.subjects)}`);
  if (existing.max_age !== wanted.max_age)
    differences.push(`max_age: ${seconds(existing.max_age)} → ${seconds(wanted.max_age)}`);
  if ((existing.num_replicas ?? 1) !== wanted.num_replicas)
    differences.push(`replicas: ${existing.num_replicas ?? 1} → ${wanted.num_replicas}`);
  return differences;
}

const seconds = (ns: number | undefined) => (ns === undefined ? "unset" : `${ns / 1e9} s`);

const messageOf = (err: unknown) => (err as Error | null)?.message ?? String(err);

function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; api_error?: { err_code?: number } } | null;
  return e?.api_error?.err_code === 10059 || e?.code === "404" || /stream not found/i.test(messageOf(err));
}

async function existingStream(jsm: JetStreamManager, name: string): Promise<StreamInfo | null> {
  try {
    return await jsm.streams.info(name);
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

interface Outcome {
  info: StreamInfo;
  replicas: number;
  /** What was done, for the log: nothing when the stream already matched. */
  change: string | null;
}

/**
 * Makes one stream match `spec` with the first replica count of `candidates` NATS accepts;
 * resolves to the count it got. Only "auto" has several candidates: an explicit count that NATS
 * refuses fails the start.
 */
async function ensureStream(jsm: JetStreamManager, spec: StreamSpec, candidates: number[]): Promise<Outcome> {
  const existing = await existingStream(jsm, spec.name);
  try {
    return await makeMatch(jsm, spec, candidates, existing);
  } catch (err) {
    if (existing || !(err instanceof StreamSetupError)) throw err;
    // Created by a process starting at the same moment, between our "not found" and our create:
    // NATS checks a new stream's name and its subjects one after the other, and refused ours with
    // "subjects overlap with an existing stream". Made to match as it now is.
    const createdMeanwhile = await existingStream(jsm, spec.name);
    if (!createdMeanwhile) throw err;
    return makeMatch(jsm, spec, candidates, createdMeanwhile);
  }
}

/** Creates the stream (`existing` null) or updates it, with the first of `candidates` NATS accepts. */
async function makeMatch(
  jsm: JetStreamManager,
  spec: StreamSpec,
  candidates: number[],
  existing: StreamInfo | null,
): Promise<Outcome> {
  const refusals: string[] = [];
  for (const replicas of candidates) {
    const wanted: Managed = { subjects: spec.subjects, max_age: spec.maxAgeNs, num_replicas: replicas };
    const differences = existing ? streamDifferences(existing.config, wanted) : [];
    if (existing && differences.length === 0) return { info: existing, replicas, change: null };
    try {
      const info = existing
        ? await jsm.streams.update(spec.name, { ...existing.config, ...wanted })
        : await jsm.streams.add({ name: spec.name, ...wanted });
      const refusedMore = refusals.length > 0 ? `; NATS refused more: ${refusals.join("; ")}` : "";
      const done = existing ? `updated (${differences.join(", ")})` : `created with ${replicas} replica(s)`;
      return { info, replicas, change: done + refusedMore };
    } catch (err) {
      // Unanswered is not refused: kept as it is, so that the start's retry recognises it.
      if (isSettlingJetStream(err)) throw err;
      if (!PLACEMENT_REFUSED.test(messageOf(err))) throw refused(spec, existing, wanted, err);
      refusals.push(`${replicas}: ${messageOf(err)}`);
    }
  }
  throw new StreamSetupError(
    `JetStream stream "${spec.name}" cannot have the replicas asked for (JETSTREAM_REPLICAS): NATS answered ${refusals.join("; ")}. ` +
      "Set JETSTREAM_REPLICAS to at most the number of JetStream servers of the NATS cluster.",
  );
}

function refused(spec: StreamSpec, existing: StreamInfo | null, wanted: Managed, err: unknown): StreamSetupError {
  if (!existing)
    return new StreamSetupError(
      `JetStream stream "${spec.name}" could not be created with ${wanted.num_replicas} replica(s): ${messageOf(err)}`,
    );
  return new StreamSetupError(
    `JetStream stream "${spec.name}" exists with other settings (${streamDifferences(existing.config, wanted).join(", ")}) ` +
      `and NATS refused to update it: ${messageOf(err)}. Change it by hand (nats stream edit), or delete it once its consumers have caught up.`,
  );
}

/**
 * Makes every stream of `specs` match them, one after the other; logs what it changed, and
 * resolves to each stream's info. With "auto", the count the first stream got is where the next
 * one starts, so a smaller cluster answers "no" once, not once per stream.
 */
export async function ensureStreams(
  jsm: JetStreamManager,
  specs: readonly StreamSpec[],
  setting: ReplicaSetting,
  server: ServerFacts,
  log: (line: string) => void,
): Promise<Map<string, StreamInfo>> {
  const infos = new Map<string, StreamInfo>();
  let candidates = replicaCandidates(setting, server);
  for (const spec of specs) {
    const { info, replicas, change } = await ensureStream(jsm, spec, candidates);
    if (change) log(`JetStream stream "${spec.name}" ${change}.`);
    infos.set(spec.name, info);
    candidates = candidates.filter((n) => n <= replicas);
  }
  return infos;
}
