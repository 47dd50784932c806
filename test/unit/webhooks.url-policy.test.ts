import { checkTarget, isForbiddenAddress, parseTarget, useResolver } from "../../services/webhooks/webhooks.url-policy";

const strict = { allowInsecure: false };
const insecure = { allowInsecure: true };

/** Every way we know to write an IPv4 address in a URL's host, so a new spelling cannot slip by. */
function ipv4Spellings(dotted: string): string[] {
  const [a, b, c, d] = dotted.split(".").map(Number);
  const n = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
  const hex = (x: number) => x.toString(16);
  const hi = (a << 8) + b;
  const lo = (c << 8) + d;
  return [
    dotted,
    `${dotted}.`,
    String(n),
    `0x${hex(n)}`,
    `0X${hex(n).toUpperCase()}`,
    `0${n.toString(8)}`,
    [a, b, c, d].map((x) => `0${x.toString(8)}`).join("."),
    [a, b, c, d].map((x) => `0x${hex(x)}`).join("."),
    `${a}.${(b << 16) + (c << 8) + d}`,
    `${a}.${b}.${(c << 8) + d}`,
    `0x${hex(a)}.${(b << 16) + (c << 8) + d}`,
    // IPv6 forms that carry it: mapped, compatible, translated (SIIT), NAT64, 6to4; dotted and hex.
    `[::ffff:${dotted}]`,
    `[::ffff:${hex(hi)}:${hex(lo)}]`,
    `[0:0:0:0:0:FFFF:${hex(hi).toUpperCase()}:${hex(lo).toUpperCase()}]`,
    `[::${dotted}]`,
    `[::${hex(hi)}:${hex(lo)}]`,
    `[::ffff:0:${dotted}]`,
    `[::ffff:0:${hex(hi)}:${hex(lo)}]`,
    `[64:ff9b::${dotted}]`,
    `[64:ff9b::${hex(hi)}:${hex(lo)}]`,
    `[64:ff9b:1::${hex(hi)}:${hex(lo)}]`,
    `[2002:${hex(hi)}:${hex(lo)}::1]`,
  ];
}

const FORBIDDEN_IPV4 = [
  "127.0.0.1",
  "10.0.0.1",
  "192.168.1.1",
  "172.16.5.4",
  "169.254.169.254",
  "100.100.100.200",
  "0.0.0.0",
  "224.0.0.1",
  "168.63.129.16",
];

const FORBIDDEN_ADDRESSES = [
  "127.0.0.1",
  "127.255.0.1",
  "127.1",
  "0x7f.1",
  "0177.0.0.1",
  "2130706433",
  "10.1.2.3",
  "172.16.0.1",
  "172.31.255.255",
  "192.168.1.1",
  "169.254.169.254",
  "100.64.0.1",
  "100.100.100.200",
  "0.0.0.0",
  "224.0.0.1",
  "255.255.255.255",
  "168.63.129.16",
  "192.0.2.1",
  "198.18.0.1",
  "240.0.0.1",
  "192.175.48.1",
  "192.52.193.1",
  "::1",
  "::",
  "fc00::1",
  "fd00:ec2::254",
  "fe80::1",
  "fe80::1%eth0",
  "fec0::1",
  "ff02::1",
  "100::1",
  "::ffff:10.0.0.1",
  "::ffff:127.0.0.1",
  "::ffff:7f00:1",
  "::7f00:1",
  "::127.0.0.1",
  "::ffff:0:7f00:1",
  "::ffff:0:a9fe:a9fe",
  "64:ff9b::a00:1",
  "64:ff9b::7f00:1",
  "64:ff9b:1::5db8:d70e",
  "2002:a00:1::1",
  "2002:7f00:1::1",
  "2001::1",
  "2001:2::1",
  "2001:3::1",
  "2001:db8::1",
  "2001:10::1",
  "2001:20::1",
  "2620:4f:8000::1",
  "3fff::1",
  "not an address",
  "",
];

const PUBLIC_ADDRESSES = [
  "93.184.216.34",
  "93.184.215.14",
  "8.8.8.8",
  "172.32.0.1",
  "100.128.0.1",
  "168.63.129.17",
  "2606:4700::1111",
  "2606:4700:4700::1111",
  "2a00:1450:4007:80e::200e",
  "::ffff:93.184.216.34",
  "64:ff9b::5db8:d870",
  "2002:5db8:d870::1",
];

describe("webhook URL policy", () => {
  afterEach(() => useResolver(null));

  it.each(FORBIDDEN_ADDRESSES)("when the address is %j, then it is forbidden", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(PUBLIC_ADDRESSES)("when the address is the public %s, then it is allowed", (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  const spelled = FORBIDDEN_IPV4.flatMap((ip) => ipv4Spellings(ip).map((host) => [ip, host] as const));
  it.each(spelled)("when a URL names %s as %s, then it is refused without any DNS lookup", async (_ip, host) => {
    useResolver(async () => {
      throw new Error("must not resolve");
    });
    await expect(checkTarget(`https://${host}/hook`, strict)).resolves.toMatchObject({ ok: false, kind: "refused" });
  });

  /** IPv4-compatible (::a.b.c.d) and local-use NAT64 forms are refused whatever they carry. */
  const refusedWhole = (host: string) => /^\[(::(?!ffff)|64:ff9b:1::)/i.test(host);
  it.each(ipv4Spellings("93.184.216.34").filter((h) => !refusedWhole(h)))(
    "when a URL names a public address as %s, then it is accepted (the spellings are real, not refused by accident)",
    async (host) => {
      await expect(checkTarget(`https://${host}/hook`, strict)).resolves.toMatchObject({ ok: true });
    },
  );

  it.each(["localhost", "LOCALHOST.", "LocalHost", "api.localhost", "x.LOCALHOST.."])(
    "when the host is the name %s, then it is refused whatever the resolver says",
    async (host) => {
      useResolver(async () => [{ address: "93.184.216.34", family: 4 }]);
      await expect(checkTarget(`https://${host}/hook`, strict)).resolves.toMatchObject({ ok: false, kind: "refused" });
    },
  );

  it("when a trailing-dot, upper-case name resolves to loopback, then the URL is refused naming the address", async () => {
    useResolver(async (host) => (host === "hooks.example.com." ? [{ address: "127.0.0.1", family: 4 }] : []));
    await expect(checkTarget("https://HOOKS.Example.COM./in", strict)).resolves.toMatchObject({
      ok: false,
      kind: "refused",
      reason: expect.stringContaining("127.0.0.1"),
    });
  });

  it("when the URL is http://, then it is refused unless insecure targets are allowed", () => {
    expect(parseTarget("http://hooks.example.com/x", strict)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/https/),
    });
    expect(parseTarget("http://hooks.example.com/x", insecure)).toMatchObject({ ok: true });
  });

  it("when the URL carries credentials or is not absolute, then it is invalid", () => {
    expect(parseTarget("https://user:pw@hooks.example.com/", strict).ok).toBe(false);
    expect(parseTarget("/relative", strict).ok).toBe(false);
    expect(parseTarget("ftp://hooks.example.com/", insecure).ok).toBe(false);
  });

  it("when any address of the host is private, then the URL is refused", async () => {
    useResolver(async () => [
      { address: "93.184.215.14", family: 4 },
      { address: "10.0.0.7", family: 4 },
    ]);
    await expect(checkTarget("https://hooks.example.com/in", strict)).resolves.toMatchObject({
      ok: false,
      kind: "refused",
      reason: expect.stringContaining("10.0.0.7"),
    });
  });

  it("when the host resolves to an IPv6 form carrying a loopback address, then the URL is refused", async () => {
    useResolver(async () => [{ address: "::ffff:0:7f00:1", family: 6 }]);
    await expect(checkTarget("https://hooks.example.com/in", strict)).resolves.toMatchObject({
      ok: false,
      kind: "refused",
    });
  });

  it("when every address of the host is public, then the URL is accepted, normalized and its addresses kept", async () => {
    useResolver(async () => [{ address: "93.184.215.14", family: 4 }]);
    const verdict = await checkTarget("https://HOOKS.example.com:443/in#frag", strict);
    expect(verdict).toMatchObject({ ok: true, addresses: [{ address: "93.184.215.14", family: 4 }] });
    expect(verdict.ok && verdict.url.href).toBe("https://hooks.example.com/in");
  });

  it("when the host does not resolve, then the verdict says unresolved", async () => {
    useResolver(async () => {
      throw Object.assign(new Error("nope"), { code: "ENOTFOUND" });
    });
    await expect(checkTarget("https://nowhere.example.com/", strict)).resolves.toMatchObject({
      ok: false,
      kind: "unresolved",
    });
  });

  it("when insecure targets are allowed, then local addresses pass", async () => {
    await expect(checkTarget("http://127.0.0.1:9/", insecure)).resolves.toMatchObject({ ok: true });
  });
});
