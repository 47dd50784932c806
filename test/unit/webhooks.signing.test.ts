import { Webhook } from "standardwebhooks";
import { webhookHeaders } from "../../services/webhooks/webhooks.sender";
import { generateKey, generateSecret, sign } from "../../services/webhooks/webhooks.signing";
import { productUserAgent } from "../../shared/product";
import { readFileSync } from "node:fs";
import path from "node:path";

// Read, not imported: a JSON import would copy package.json into dist/.
const pkg = JSON.parse(readFileSync(path.join(__dirname, "../../package.json"), "utf8")) as {
  name: string;
  version: string;
};

const body = JSON.stringify({ id: 7, code: "ORD-20261121-000007", note: "ünïcödé ✓" });

describe("webhook signing", () => {
  it("when a request is signed, then the standardwebhooks library verifies it as a subscriber would", () => {
    const secret = generateSecret();
    const headers = webhookHeaders({
      url: "https://x.test/",
      event: "sales_order_validated",
      key: generateKey(),
      secret,
      webhookId: "msg_abc",
      body,
    });
    const verified = new Webhook(secret).verify(body, headers);
    expect(verified).toEqual(JSON.parse(body));
  });

  it("when the body or the secret differs, then verification fails", () => {
    const secret = generateSecret();
    const headers = webhookHeaders({
      url: "https://x.test/",
      event: "e",
      key: "k",
      secret,
      webhookId: "msg_abc",
      body,
    });
    expect(() => new Webhook(secret).verify(body.replace("7", "8"), headers)).toThrow();
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow();
  });

  it("when signing, then the signature equals the library's own", () => {
    const secret = generateSecret();
    const at = new Date("2026-11-21T10:00:00Z");
    expect(sign(secret, "msg_1", Math.floor(at.getTime() / 1000), body)).toBe(
      new Webhook(secret).sign("msg_1", at, body),
    );
  });

  it("when headers are built, then they carry the event, the key and the product's User-Agent", () => {
    const headers = webhookHeaders({
      url: "https://x.test/",
      event: "sales_order_created",
      key: "whk_1",
      secret: generateSecret(),
      webhookId: "msg_1",
      body,
    });
    expect(headers).toMatchObject({
      "Content-Type": "application/json",
      "X-WEBHOOK-EVENT": "sales_order_created",
      "X-WEBHOOK-KEY": "whk_1",
      "User-Agent": `${pkg.name}/${pkg.version}`,
      "webhook-id": "msg_1",
    });
    expect(productUserAgent()).toBe(`${pkg.name}/${pkg.version}`);
  });

  it("when secrets and keys are generated, then they have the documented forms and differ each time", () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    expect(generateSecret()).not.toBe(secret);
    expect(generateKey()).toMatch(/^whk_[\w-]{32}$/);
  });
});
