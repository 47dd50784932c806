import { checkTarget, isForbiddenAddress, parseTarget, useResolver } from "../../services/webhooks/webhooks.url-policy";

const strict = { allowInsecure: false };
const insecure = { allowInsecure: true };

describe("webhook URL policy", () => {
  afterEach(() => useResolver(null));

  it.each([
    "127.0.0.1", "127.255.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
    "100.64.0.1", "100.100.100.200", "0.0.0.0", "224.0.0.1", "255.255.255.255", "168.63.129.16",
    "::1", "::", "fc00::1", "fd00:ec2::254", "fe80::1", "ff02::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1",
    "64:ff9b::a00:1", "2002:a00:1::1",
  ])("when the address is %s, then it is forbidden", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(["93.184.215.14", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "64:ff9b::5db8:d70e"])(
    "when the address is the public %s, then it is allowed",
    (address) => {
      expect(isForbiddenAddress(address)).toBe(false);
    },
  );

  it("when the URL is http://, then it is refused unless insecure targets are allowed", () => {
    expect(parseTarget("http://hooks.example.com/x", strict)).toMatchObject({ ok: false, reason: expect.stringMatching(/https/) });
    expect(parseTarget("http://hooks.example.com/x", insecure)).toMatchObject({ ok: true });
  });

  it("when the URL carries credentials or is not absolute, then it is invalid", () => {
    expect(parseTarget("https://user:pw@hooks.example.com/", strict).ok).toBe(false);
    expect(parseTarget("/relative", strict).ok).toBe(false);
    expect(parseTarget("ftp://hooks.example.com/", insecure).ok).toBe(false);
  });

  it("when the host is an IP literal in a private range, then it is refused without any DNS lookup", async () => {
    useResolver(async () => {
      throw new Error("must not resolve");
    });
    for (const url of ["https://127.0.0.1/", "https://[::1]:8443/", "https://0x7f.1/", "https://2130706433/", "https://169.254.169.254/latest/meta-data"]) {
      await expect(checkTarget(url, strict)).resolves.toMatchObject({ ok: false, kind: "refused" });
    }
  });

  it("when any address of the host is private, then the URL is refused", async () => {
    useResolver(async () => [{ address: "93.184.215.14", family: 4 }, { address: "10.0.0.7", family: 4 }]);
    await expect(checkTarget("https://hooks.example.com/in", strict)).resolves.toMatchObject({ ok: false, kind: "refused", reason: expect.stringContaining("10.0.0.7") });
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
    await expect(checkTarget("https://nowhere.example.com/", strict)).resolves.toMatchObject({ ok: false, kind: "unresolved" });
  });

  it("when insecure targets are allowed, then local addresses pass", async () => {
    await expect(checkTarget("http://127.0.0.1:9/", insecure)).resolves.toMatchObject({ ok: true });
  });
});
