/**
 * The URL policy as it is run in production (WEBHOOK_ALLOW_INSECURE_TARGETS=false): refused
 * targets at subscription, and a delivery refused when its host starts resolving to a private
 * address. DNS is replaced by a resolver the test controls, so nothing leaves this machine.
 */
import type { Principal } from "../../shared/security/auth";
import { EVENTS } from "../../shared/messaging/events";
import { useResolver, type ResolvedAddress } from "../../services/webhooks/webhooks.url-policy";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";
import { EVENTUALLY_MS } from "../helpers/deadlines";
import { addEventSource, type EventSource } from "../helpers/event-source";

const PUBLIC: ResolvedAddress = { address: "93.184.215.14", family: 4 };

describe("webhook URL policy, enforced", () => {
  let t: TestBroker;
  let source: EventSource;
  const partner: Principal = { ...principal("partner", ["partner", "webhooks"]), webhookEvents: [...EVENTS] };
  let answers = new Map<string, ResolvedAddress[]>();

  const subscribe = (url: string) =>
    t.broker.call<{ id: number }, object>(
      "webhooks.subscribe",
      { event: "sales_order_validated", url },
      { meta: { client: partner } },
    );

  beforeAll(async () => {
    useResolver(async (host) => {
      const found = answers.get(host);
      if (!found) throw Object.assign(new Error(`unknown host ${host}`), { code: "ENOTFOUND" });
      return found;
    });
    t = await startTestBroker({
      services: ["webhooks"],
      env: {
        WEBHOOK_ALLOW_INSECURE_TARGETS: "false",
        WEBHOOK_DISPATCH_INTERVAL_MS: "50",
        OUTBOX_RELAY_INTERVAL_MS: "50",
      },
    });
    source = await addEventSource(t.broker, "webhooks_policy_source");
  });
  afterAll(async () => {
    await t?.stop();
    useResolver(null);
  });
  beforeEach(() => {
    answers = new Map([
      ["hooks.example.com", [PUBLIC]],
      ["internal.example.com", [{ address: "10.1.2.3", family: 4 }]],
    ]);
  });

  it.each([
    ["plain http", "http://hooks.example.com/in"],
    ["loopback", "https://127.0.0.1/in"],
    ["IPv6 loopback", "https://[::1]/in"],
    ["a private network", "https://192.168.0.10/in"],
    ["cloud metadata", "https://169.254.169.254/latest/meta-data/"],
    ["CGNAT", "https://100.64.1.1/in"],
    ["a name resolving to a private address", "https://internal.example.com/in"],
    ["a name that does not resolve", "https://nowhere.example.com/in"],
  ])("when the URL points at %s, then subscribing is 422 naming `url`", async (_what, url) => {
    await expect(subscribe(url)).rejects.toMatchObject({ code: 422, data: { errors: [{ path: "url" }] } });
  });

  it("when a host that resolved to a public address starts resolving to a private one, then its delivery is refused and not sent", async () => {
    const sub = await subscribe("https://hooks.example.com/in");
    answers.set("hooks.example.com", [{ address: "10.0.0.5", family: 4 }]);
    await source.emit([{ event: "sales_order_validated", ownerClientId: partner.clientId, data: { id: 1 } }]);

    const deadline = Date.now() + EVENTUALLY_MS;
    let deliveries: { status: string; attempts: { statusCode: number | null; error: string | null }[] }[] = [];
    while (Date.now() < deadline) {
      deliveries = (
        await t.broker.call<{ items: typeof deliveries }, object>(
          "webhooks.deliveries",
          { id: sub.id },
          { meta: { client: partner } },
        )
      ).items;
      if (deliveries[0]?.status === "refused") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0].status).toBe("refused");
    expect(deliveries[0].attempts).toEqual([
      expect.objectContaining({ statusCode: null, error: expect.stringContaining("10.0.0.5") }),
    ]);
  });
});
