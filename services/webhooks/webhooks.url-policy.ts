/**
 * Where webhooks may be sent. A subscriber's URL must be `https://` and its host must resolve
 * only to public addresses: never loopback, private (RFC 1918, fc00::/7), link-local, CGNAT,
 * multicast, unspecified, reserved or cloud metadata addresses. Otherwise anyone able to
 * subscribe could make the service call its own network (SSRF).
 *
 * The check runs when subscribing and again before each delivery, because what a name resolves
 * to can change; the delivery then connects to the very addresses that were checked.
 * WEBHOOK_ALLOW_INSECURE_TARGETS (development and tests) allows `http://` and any address.
 */
import dns from "node:dns/promises";
import net from "node:net";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has. Replaceable for tests (`useResolver`). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (hostname) =>
  (await dns.lookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

let resolver: Resolver = systemResolver;

/** Replaces the resolver (tests switch what a name resolves to); `null` restores the system one. */
export function useResolver(next: Resolver | null): void {
  resolver = next ?? systemResolver;
}

const FORBIDDEN_V4: [string, number][] = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // CGNAT (also Alibaba's metadata 100.100.100.200)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (AWS, GCP, Azure metadata 169.254.169.254)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
  ["168.63.129.16", 32], // Azure platform endpoint (metadata, DNS) on a public address
];

const FORBIDDEN_V6: [string, number][] = [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["64:ff9b:1::", 48], // local-use NAT64
  ["100::", 64], // discard
  ["2001::", 32], // Teredo: hides an arbitrary IPv4 address
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local (AWS metadata fd00:ec2::254)
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
];

const forbidden = new net.BlockList();
for (const [prefix, bits] of FORBIDDEN_V4) forbidden.addSubnet(prefix, bits, "ipv4");
for (const [prefix, bits] of FORBIDDEN_V6) forbidden.addSubnet(prefix, bits, "ipv6");
// IPv4-mapped addresses (::ffff:a.b.c.d) are matched against the IPv4 rules by BlockList itself.

/** The IPv4 address NAT64 (64:ff9b::/96) or 6to4 (2002::/16) carries inside an IPv6 one. */
function embeddedIpv4(address: string): string | null {
  const words = expandIpv6(address);
  if (!words) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const isNat64 = words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0);
  if (isNat64) return v4(words[6], words[7]);
  if (words[0] === 0x2002) return v4(words[1], words[2]);
  return null;
}

function expandIpv6(address: string): number[] | null {
  if (net.isIPv6(address) === false || address.includes(".")) return null;
  const [head, tail] = address.split("::");
  const part = (s: string | undefined) => (s ? s.split(":").map((w) => Number.parseInt(w, 16)) : []);
  const left = part(head);
  const right = part(tail);
  const zeros = tail === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  const words = [...left, ...zeros, ...right];
  return words.length === 8 ? words : null;
}

/** True when no webhook may be sent to this IP address. */
export function isForbiddenAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return true;
  if (forbidden.check(address, family === 4 ? "ipv4" : "ipv6")) return true;
  const inner = family === 6 ? embeddedIpv4(address) : null;
  return inner !== null && forbidden.check(inner, "ipv4");
}

export type TargetVerdict =
  | { ok: true; url: URL; addresses: ResolvedAddress[] }
  /** `invalid`: the URL itself is not acceptable; `refused`: it leads somewhere forbidden; `unresolved`: DNS gave no answer. */
  | { ok: false; kind: "invalid" | "refused" | "unresolved"; reason: string };

export interface UrlPolicyOptions {
  allowInsecure: boolean;
}

/** Checks a URL's form only (no DNS): the normalized URL, or why it is not acceptable. */
export function parseTarget(text: string, opts: UrlPolicyOptions): { ok: true; url: URL } | { ok: false; reason: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "Must be an absolute URL." };
  }
  const schemes = opts.allowInsecure ? ["https:", "http:"] : ["https:"];
  if (!schemes.includes(url.protocol)) return { ok: false, reason: "Must be an https:// URL." };
  if (url.username || url.password) return { ok: false, reason: "Must not contain credentials; check X-WEBHOOK-KEY instead." };
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
  let addresses: ResolvedAddress[];
  if (literal !== 0) {
    addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolver(host);
    } catch (err) {
      return { ok: false, kind: "unresolved", reason: `The host ${host} does not resolve (${(err as { code?: string }).code ?? "error"}).` };
    }
    if (addresses.length === 0) return { ok: false, kind: "unresolved", reason: `The host ${host} does not resolve.` };
  }
  if (!opts.allowInsecure) {
    const bad = addresses.find((a) => isForbiddenAddress(a.address));
    if (bad) return { ok: false, kind: "refused", reason: `The host ${host} resolves to ${bad.address}, a private, local or reserved address.` };
  }
  return { ok: true, url: parsed.url, addresses };
}
