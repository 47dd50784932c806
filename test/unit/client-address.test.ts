import type { IncomingMessage } from "node:http";
import fc from "fast-check";
import { clientAddress, TrustedProxies } from "../../gateway/client-address";

function request(peer: string, forwardedFor?: string): IncomingMessage {
  return {
    socket: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor },
  } as unknown as IncomingMessage;
}

const ipv4 = fc.ipV4();

describe("the address the failed-authentication throttle counts", () => {
  it("when no proxy is trusted, then it is the socket's address whatever X-Forwarded-For says", () => {
    const none = new TrustedProxies([]);
    fc.assert(
      fc.property(ipv4, fc.array(ipv4, { maxLength: 4 }), (peer, forged) => {
        expect(clientAddress(request(peer, forged.join(", ")), none)).toBe(peer);
      }),
    );
  });

  it("when the peer is a trusted proxy, then it is the rightmost forwarded address that is not a trusted proxy", () => {
    const trusted = new TrustedProxies(["10.0.0.0/8", "192.0.2.7"]);
    fc.assert(
      fc.property(
        fc.array(ipv4, { maxLength: 3 }),
        fc.ipV4().filter((a) => !a.startsWith("10.") && a !== "192.0.2.7"),
        (forged, client) => {
          // What the client wrote itself, then its real address as the first proxy saw it, then an inner proxy.
          const header = [...forged, client, "10.1.2.3"].join(", ");
          expect(clientAddress(request("192.0.2.7", header), trusted)).toBe(client);
        },
      ),
    );
  });

  it("when a request comes from an untrusted peer with X-Forwarded-For, then that header is not believed even if a trusted proxy exists", () => {
    const trusted = new TrustedProxies(["10.0.0.0/8"]);
    expect(clientAddress(request("203.0.113.9", "198.51.100.1"), trusted)).toBe("203.0.113.9");
  });

  it("when the socket is dual-stack, then an IPv4-mapped peer counts as its IPv4 address", () => {
    expect(clientAddress(request("::ffff:198.51.100.4"), new TrustedProxies(["198.51.100.4"]))).toBe("198.51.100.4");
  });

  it("when two IPv6 addresses share their first 64 bits, then they are one address for the throttle", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }),
        fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 4, maxLength: 4 }),
        (a, hostPart) => {
          const first = a.map((n) => n.toString(16)).join(":");
          const second = [...a.slice(0, 4), ...hostPart].map((n) => n.toString(16)).join(":");
          const none = new TrustedProxies([]);
          // ::ffff:0:0/96 holds IPv4 addresses, which are counted one by one.
          fc.pre(!first.startsWith("0:0:0:0:0:ffff:"));
          expect(clientAddress(request(first), none)).toBe(clientAddress(request(second), none));
          expect(clientAddress(request(first), none)).toMatch(/\/64$/);
        },
      ),
    );
  });
});
