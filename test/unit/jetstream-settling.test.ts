import { isSettlingJetStream, untilJetStreamSettles } from "../../shared/messaging/jetstream-settling";

/** nats.js's errors carry a `code`, and a JetStream API refusal its `api_error`. */
const natsError = (message: string, code: string, errCode?: number) =>
  Object.assign(new Error(message), { code, ...(errCode ? { api_error: { err_code: errCode } } : {}) });

const TIMEOUT = natsError("TIMEOUT", "TIMEOUT");
const NO_RESPONDERS = natsError("503", "503");
const NOT_READY = natsError("JetStream system temporarily unavailable", "503", 10008);
const REFUSED = natsError("stream name already in use with a different configuration", "400", 10058);

/** An attempt that fails with `failures` in turn, then answers "done"; counts its calls. */
function attempts(...failures: Error[]) {
  const calls = { n: 0 };
  const run = async () => {
    const failure = failures[calls.n++];
    if (failure) throw failure;
    return "done";
  };
  return { calls, run };
}

describe("a JetStream request while the cluster settles", () => {
  it("when it times out, finds no responder or JetStream not ready, then it is sent again until answered, each retry logged", async () => {
    const { calls, run } = attempts(TIMEOUT, NO_RESPONDERS, NOT_READY);
    const lines: string[] = [];
    await expect(untilJetStreamSettles(run, { what: "Subscribing", log: (l) => lines.push(l) })).resolves.toBe("done");
    expect(calls.n).toBe(4);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^Subscribing failed \(TIMEOUT\); trying again \(attempt 2\)/);
  });

  it("when NATS refuses it (not a settling cluster), then it fails at once", async () => {
    const { calls, run } = attempts(REFUSED);
    await expect(untilJetStreamSettles(run, { what: "x", log: () => undefined })).rejects.toBe(REFUSED);
    expect(calls.n).toBe(1);
  });

  it("when the caller names another failure worth a retry, then that one is sent again too", async () => {
    const race = new Error("consumer name already in use");
    const { calls, run } = attempts(race);
    const retried: string[] = [];
    const lines: string[] = [];
    await untilJetStreamSettles(run, {
      what: "Subscribing",
      log: (l) => lines.push(l),
      alsoRetry: (err) => (err === race ? "to bind to it" : null),
      beforeRetry: () => retried.push("cleaned"),
    });
    expect({ calls: calls.n, retried, lines }).toEqual({
      calls: 2,
      retried: ["cleaned"],
      lines: ["Subscribing failed (consumer name already in use); trying again (attempt 2) to bind to it."],
    });
  });

  it("when the cluster has not settled within the window, then the last failure ends it after three attempts at least", async () => {
    const { calls, run } = attempts(TIMEOUT, TIMEOUT, TIMEOUT, TIMEOUT);
    await expect(untilJetStreamSettles(run, { what: "x", log: () => undefined, windowMs: 0 })).rejects.toBe(TIMEOUT);
    expect(calls.n).toBe(3);
  });

  it("when a stop has begun, then it is not sent again", async () => {
    const { calls, run } = attempts(TIMEOUT);
    await expect(untilJetStreamSettles(run, { what: "x", log: () => undefined, stopping: () => true })).rejects.toBe(
      TIMEOUT,
    );
    expect(calls.n).toBe(1);
  });

  it("when the failure is no NATS error at all, then it is not taken for a settling cluster", () => {
    expect([null, undefined, "TIMEOUT", new Error("TIMEOUT"), REFUSED].map(isSettlingJetStream)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
