import { Readable } from "node:stream";
import {
  keptBody,
  keptHeaders,
  readBodyStart,
  RESPONSE_BODY_MAX_BYTES,
  RESPONSE_HEADERS_MAX,
  RESPONSE_HEADERS_MAX_BYTES,
} from "../../services/webhooks/webhooks.response-capture";

const KEY = "whk_secretkeyvalue";

describe("what an attempt keeps of the endpoint's answer", () => {
  it("when headers are many, large or ours, then at most 20 in 2 KiB are kept, cookies and hop-by-hop ones never, our key redacted", () => {
    const raw: Record<string, unknown> = {
      "Content-Type": "application/json",
      "set-cookie": ["a=1", "b=2"],
      connection: "keep-alive",
      "keep-alive": "timeout=5",
      "x-echo": `got ${KEY}`,
      "x-list": ["one", "two"],
      "x-huge": "h".repeat(3000),
    };
    for (let i = 0; i < 40; i++) raw[`x-extra-${i}`] = "v";
    const kept = keptHeaders(raw, [KEY, ""]);
    expect(kept).toMatchObject({
      "content-type": "application/json",
      "x-echo": "got [redacted]",
      "x-list": "one, two",
    });
    for (const name of ["set-cookie", "connection", "keep-alive", "x-huge"]) expect(kept).not.toHaveProperty(name);
    expect(Object.keys(kept)).toHaveLength(RESPONSE_HEADERS_MAX);
    const bytes = Object.entries(kept).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
    expect(bytes).toBeLessThanOrEqual(RESPONSE_HEADERS_MAX_BYTES);
  });

  it("when a body is longer than 4 KiB, then its start is kept whole-charactered, marked truncated, our key redacted and NULs replaced", () => {
    const body = Buffer.from(`${KEY}\u0000${"€".repeat(3000)}`, "utf8");
    const kept = keptBody(body, true, [KEY]);
    expect(kept.bodyTruncated).toBe(true);
    expect(Buffer.byteLength(kept.body)).toBeLessThanOrEqual(RESPONSE_BODY_MAX_BYTES);
    expect(kept.body).toMatch(/^\[redacted\]\ufffd€+$/);
    expect(keptBody(Buffer.from("ok"), true, [KEY])).toEqual({ body: "ok", bodyTruncated: false });
    // Cut short (the attempt's deadline): what arrived is kept, marked truncated.
    expect(keptBody(Buffer.from("partial"), false, [KEY])).toEqual({ body: "partial", bodyTruncated: true });
  });

  it("when the body is read, then it stops after what can be kept and lets the rest flow; a stream that fails keeps what came", async () => {
    const huge = Readable.from(
      (function* () {
        for (let i = 0; i < 1000; i++) yield Buffer.alloc(1024, 0x61);
      })(),
    );
    const start = await readBodyStart(huge, [KEY]);
    expect(start.complete).toBe(false);
    expect(start.bytes.length).toBeGreaterThan(RESPONSE_BODY_MAX_BYTES);
    expect(start.bytes.length).toBeLessThan(RESPONSE_BODY_MAX_BYTES + 2048);

    expect(await readBodyStart(Readable.from([Buffer.from("short")]), [KEY])).toEqual({
      bytes: Buffer.from("short"),
      complete: true,
    });
    const failing = new Readable({ read() {} });
    const read = readBodyStart(failing, [KEY]);
    failing.push(Buffer.from("half"));
    await new Promise((resolve) => setImmediate(resolve));
    failing.destroy(new Error("socket hang up"));
    expect(await read).toEqual({ bytes: Buffer.from("half"), complete: false });
  });
});
