/**
 * shared/messaging/announce.ts: a change already committed is announced, and a broadcast that
 * fails (NATS away) neither fails the action nor, left un-awaited, ends the process.
 */
import { ServiceBroker, type Context } from "moleculer";
import { announce } from "../../shared/messaging/announce";

describe("announcing a committed change", () => {
  const warnings: string[] = [];
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  const broker = new ServiceBroker({ nodeID: "announce-test", logger: false });
  broker.createService({
    name: "things",
    actions: {
      change(ctx: Context) {
        // As crm and references do: the answer does not wait for the listeners.
        void announce(ctx, "thingsChanged", { ids: [1] }, { warn: (line: string) => void warnings.push(line) });
        return { id: 1 };
      },
    },
  });

  beforeAll(async () => {
    process.on("unhandledRejection", onUnhandled);
    await broker.start();
  });
  afterAll(async () => {
    process.off("unhandledRejection", onUnhandled);
    await broker.stop();
  });

  it("when the broadcast is refused, then the action still answers, the failure is a warning, and no rejection is left unhandled", async () => {
    jest.spyOn(broker, "broadcast").mockRejectedValue(new Error("NATS is away"));
    await expect(broker.call("things.change")).resolves.toEqual({ id: 1 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(warnings).toEqual([expect.stringMatching(/thingsChanged.*NATS is away/)]);
    expect(unhandled).toEqual([]);
  });

  it("when the broadcast goes out, then nothing is logged", async () => {
    warnings.length = 0;
    const sent = jest.spyOn(broker, "broadcast").mockResolvedValue(undefined);
    await broker.call("things.change");
    expect(sent).toHaveBeenCalledWith("thingsChanged", { ids: [1] }, expect.anything());
    expect(warnings).toEqual([]);
  });
});
