/**
 * Where webhooks may be sent. A subscriber's URL must be `https://` and its host must resolve
 * only to plain public unicast addresses: never loopback, private (RFC 1918, fc00::/7),
 * link-local, CGNAT, multicast, unspecified, reserved or cloud metadata addresses, however they
 * are spelled (an IPv6 form carrying one of them included). Otherwise anyone able to subscribe
 * could make the service call its own network (SSRF, OWASP API7). The ranges are ipaddr.js's:
 * a maintained table beats a hand-written one.
 *
 * The check runs when subscribing and again before each delivery, because what a name resolves
 * to can change; the delivery then connects to the very addresses that were checked.
 * WEBHOOK_ALLOW_INSECURE_TARGETS (development and tests) allows `http://` and any address.
 */
import dns from "node:dns/promises";
import net from "node:net";
import ipaddr from "ipaddr.js";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has. Replaceable for tests (`useResolver`). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

let resolver: Resolver = systemResolver;

/** Replaces the resolver (tests switch what a name resolves to); `null` restores the system one. */
export function useResolver(next: Resolver | null): void {
  resolver = next ?? systemResolver;
}

/**
 * Addresses that are public unicast by their range yet answer as a cloud's own service:
 * Azure's platform endpoint (metadata, DNS, health) sits on a public address. The other
 * clouds' metadata addresses (169.254.169.254, 100.100.100.200, fd00:ec2::254) fall in
 * link-local, CGNAT and unique-local ranges that are refused anyway.
 */
const METADATA_ON_PUBLIC_RANGES = new Set(["168.63.129.16"]);

/** IPv6 ranges whose last 32 bits are an IPv4 address the packet reaches (mapped, SIIT, NAT64). */
const CARRIES_IPV4_IN_LAST_32_BITS = new Set(["ipv4Mapped", "rfc6145"]);
/** The well-known NAT64 prefix (RFC 6052); the local-use one (64:ff9b:1::/48, RFC 8215) is refused whole. */
const WELL_KNOWN_NAT64 = ipaddr.IPv6.parseCIDR("64:ff9b::/96");
/** IPv4-compatible addresses (::a.b.c.d, deprecated by RFC 4291): no public host uses one. */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96");

function lastIpv4Of(v6: ipaddr.IPv6): ipaddr.IPv4 {
  const b = v6.toByteArray();
  return new ipaddr.IPv4(b.slice(12, 16));
}

function isPublicIpv4(v4: ipaddr.IPv4): boolean {
  return v4.range() === "unicast" && !METADATA_ON_PUBLIC_RANGES.has(v4.toString());
}

/**
 * Allows only plain public unicast: every other range ipaddr.js knows (loopback, private,
 * linkLocal, carrierGradeNat, multicast, unspecified, broadcast, reserved, uniqueLocal, teredo,
 * benchmarking, as112, amt, orchid, discard, deprecated site-local...) is refused, so a range
 * added by a later ipaddr.js is refused too. IPv6 forms that carry an IPv4 address (mapped,
 * translated, NAT64, 6to4) are judged by that IPv4 address.
 */
function isPublicAddress(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (addr instanceof ipaddr.IPv4) return isPublicIpv4(addr);
  const v6 = addr;
  const range: string = v6.range();
  if (CARRIES_IPV4_IN_LAST_32_BITS.has(range)) return isPublicIpv4(lastIpv4Of(v6));
  if (range === "rfc6052") return v6.match(WELL_KNOWN_NAT64) && isPublicIpv4(lastIpv4Of(v6));
  if (range === "6to4") return isPublicIpv4(new ipaddr.IPv4(v6.toByteArray().slice(2, 6)));
  if (v6.match(IPV4_COMPATIBLE)) return false;
  return range === "unicast";
}

/** True when no webhook may be sent to this IP address (any spelling ipaddr.js parses; anything else is refused). */
export function isForbiddenAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[(.*)\]$/, "$1"));
  } catch {
    return true;
  }
  return !isPublicAddress(parsed);
}

/** Names that are the local machine by definition (RFC 6761), whatever a resolver says. */
function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.+$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

export type TargetVerdict =
  | { ok: true; url: URL; addresses: ResolvedAddress[] }
  /** `invalid`: the URL itself is not acceptable; `refused`: it leads somewhere forbidden; `unresolved`: DNS gave no answer. */
  | { ok: false; kind: "invalid" | "refused" | "unresolved"; reason: string };

export interface UrlPolicyOptions {
  allowInsecure: boolean;
}

/** Checks a URL's form only (no DNS): the normalized URL, or why it is not acceptable. */
export function parseTarget(
  text: string,
  opts: UrlPolicyOptions,
): { ok: true; url: URL } | { ok: false; reason: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "Must be an absolute URL." };
  }
  const schemes = opts.allowInsecure ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) return { ok: false, reason: "Must be an https:// URL." };
  if (url.username || url.password)
    return { ok: false, reason: "Must not contain credentials; check X-WEBHOOK-KEY instead." };
  url.hash = "";
  return { ok: true, url };
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, "$1");
}

/** Checks the URL and every address its host resolves to. */
export async function checkTarget(text: string, opts: UrlPolicyOptions): Promise<TargetVerdict> {
  const parsed = parseTarget(text, opts);
  if (!parsed.ok) return { ok: false, kind: "invalid", reason: parsed.reason };
  const host = hostOf(parsed.url);
  const literal = net.isIP(host);
  if (!opts.allowInsecure && isLocalhostName(host)) {
    return { ok: false, kind: "refused", reason: `The host ${host} is the local machine.` };
  }
  let addresses: ResolvedAddress[];
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolver(host);
    } catch (err) {
      return {
        ok: false,
        kind: "unresolved",
        reason: `The host ${host} does not resolve (${(err as { code?: string }).code ?? "error"}).`,
      };
    }
    if (addresses.length === 0) return { ok: false, kind: "unresolved", reason: `The host ${host} does not resolve.` };
  }
  if (!opts.allowInsecure) {
    const bad = addresses.find((a) => isForbiddenAddress(a.address));
    if (bad)
      return {
        ok: false,
        kind: "refused",
        reason: `The host ${host} resolves to ${bad.address}, a private, local or reserved address.`,
      };
  }
  return { ok: true, url: parsed.url, addresses };
}
