/**
 * The clients' grants as the webhooks service caches them (services/webhooks/webhooks.grants.ts):
 * a change heard moves the version on, for whoever decided on the grants it read before; and an
 * answer asked for before a change is not kept for the next reader.
 */
import type { Principal } from "../../shared/security/auth";
import { ClientGrants } from "../../services/webhooks/webhooks.grants";

const partner = (clientId: number, webhookEvents: string[]): Principal => ({
  clientId,
  name: `partner-${clientId}`,
  kind: "partner",
  scopes: ["partner", "webhooks"],
  webhookEvents,
});

/** The clients service as these tests make it answer; `held` keeps its next answer until released. */
function clientsService() {
  const current = new Map<number, Principal>();
  let hold: Promise<void> | null = null;
  let asked = 0;
  const grants = new ClientGrants(async (ids) => {
    asked += 1;
    const answer = ids.flatMap((id) => current.get(id) ?? []);
    await hold;
    return answer;
  });
  return {
    grants,
    current,
    asked: () => asked,
    holdNextAnswer() {
      let release!: () => void;
      hold = new Promise<void>((resolve) => (release = resolve));
      return () => {
        hold = null;
        release();
      };
    },
  };
}

describe("webhooks: the clients' grants", () => {
  it("when a client changes, then only its grants have changed since an earlier version, and a version read after the change sees none", () => {
    const { grants } = clientsService();
    const before = grants.version;
    grants.forget(7);
    expect(grants.changedSince(7, before)).toBe(true);
    expect(grants.changedSince(8, before)).toBe(false);
    expect(grants.changedSince(7, grants.version)).toBe(false);
  });

  it("when every client's grants are forgotten at once, then every client has changed since an earlier version", () => {
    const { grants } = clientsService();
    const before = grants.version;
    grants.clear();
    expect([7, 8, 9].map((id) => grants.changedSince(id, before))).toEqual([true, true, true]);
    expect(grants.changedSince(7, grants.version)).toBe(false);
  });

  it("when a client changes while its grants are being asked for, then that answer is not cached: the next reader asks again and gets the change", async () => {
    const service = clientsService();
    service.current.set(7, partner(7, ["sales_order_validated"]));
    const release = service.holdNextAnswer();
    const asking = service.grants.cached([7]);
    // The change lands while the old answer is on its way.
    service.current.set(7, partner(7, []));
    service.grants.forget(7);
    release();
    expect((await asking).get(7)?.webhookEvents).toEqual(["sales_order_validated"]);
    expect((await service.grants.cached([7])).get(7)?.webhookEvents).toEqual([]);
    expect(service.asked()).toBe(2);
  });

  it("when nothing changed while its grants were asked for, then the answer is cached", async () => {
    const service = clientsService();
    service.current.set(7, partner(7, ["sales_order_validated"]));
    await service.grants.cached([7]);
    await service.grants.cached([7]);
    expect(service.asked()).toBe(1);
  });
});
