/**
 * The address a request comes from, as the failed-authentication throttle counts it.
 *
 * It is the socket's peer address. Only when that peer is one of the operator's reverse proxies
 * (TRUST_PROXY) is `X-Forwarded-For` read, from the right: each trusted proxy appends the
 * address it received the request from, so the rightmost address that is not a trusted proxy is
 * the client; anything left of it was written by the client and is ignored. Without
 * TRUST_PROXY the header is never believed — any client could write it.
 *
 * IPv6 addresses count per /64: one host usually owns a whole /64 and could rotate inside it.
 */
import type { IncomingMessage } from "node:http";
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;
const IPV6_HOST_PREFIX = 64;

export class TrustedProxies {
  private readonly ranges: [Address, number][];

  /** `entries`: addresses or CIDR ranges (TRUST_PROXY, validated by shared/config/config.ts). */
  constructor(entries: readonly string[]) {
    this.ranges = entries.map((entry) => {
      if (ipaddr.isValidCIDR(entry)) return ipaddr.parseCIDR(entry);
      const one = ipaddr.process(entry);
      return [one, one.kind() === "ipv4" ? 32 : 128];
    });
  }

  includes(address: Address): boolean {
    return this.ranges.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
  }
}

function parse(text: string | undefined): Address | null {
  const trimmed = text?.trim() ?? "";
  // ipaddr.process turns ::ffff:192.0.2.1 (a dual-stack socket's IPv4 peer) into 192.0.2.1.
  return ipaddr.isValid(trimmed) ? ipaddr.process(trimmed) : null;
}

/** The counting key of an address: the address itself, or its /64 for IPv6. */
function bucketOf(address: Address): string {
  if (address.kind() === "ipv4") return address.toString();
  const bytes = address.toByteArray().map((b, i) => (i < IPV6_HOST_PREFIX / 8 ? b : 0));
  return `${ipaddr.fromByteArray(bytes).toString()}/${IPV6_HOST_PREFIX}`;
}

function forwardedFor(req: IncomingMessage): string[] {
  const header = req.headers["x-forwarded-for"];
  const text = Array.isArray(header) ? header.join(",") : (header ?? "");
  return text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

export function clientAddress(req: IncomingMessage, trusted: TrustedProxies): string {
  let client = parse(req.socket.remoteAddress);
  if (!client) return "unknown";
  const hops = forwardedFor(req);
  while (trusted.includes(client) && hops.length > 0) {
    const previous = parse(hops.pop());
    // A hop a trusted proxy did not write well: stop at the last address we can vouch for.
    if (!previous) break;
    client = previous;
  }
  return bucketOf(client);
}
