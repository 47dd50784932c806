/**
 * A subscription's custom headers (webhooks.custom-headers.ts): a change sets or removes headers
 * by name whatever its case, never one this service sets itself or one that decides how the
 * request travels, never more than ten; the values are sealed and sent as they were given.
 */
import { InvalidInputError } from "../../shared/errors";
import { newEncryptionKeyEntry, parseEncryptionKeys, SecretBox } from "../../shared/security/secret-box";
import {
  applyHeaderChanges,
  isReservedHeader,
  MAX_CUSTOM_HEADERS,
  openHeaders,
  sealHeaders,
} from "../../services/webhooks/webhooks.custom-headers";
import { webhookHeaders } from "../../services/webhooks/webhooks.sender";

const box = new SecretBox(parseEncryptionKeys([newEncryptionKeyEntry("k1")], "SECRETS_ENCRYPTION_KEYS").keys);

function refusal(work: () => unknown): { path: string } | null {
  try {
    work();
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInputError);
    return { path: (err as InvalidInputError).data.errors[0].path };
  }
}

describe("custom headers", () => {
  it("when a change names headers, then a value sets one (whatever the case of the name it replaces), null removes one, and the others stay", () => {
    const current = { Authorization: "Bearer a", "X-Tenant": "acme", "X-Region": "eu" };
    expect(applyHeaderChanges(current, { authorization: "Bearer b", "X-Region": null, "X-New": "1" })).toEqual({
      authorization: "Bearer b",
      "X-Tenant": "acme",
      "X-New": "1",
    });
    expect(applyHeaderChanges(current, { "x-unknown": null })).toEqual(current);
  });

  it.each([
    "webhook-id",
    "Webhook-Signature",
    "webhook-anything-later",
    "X-WEBHOOK-KEY",
    "x-webhook-previous-key",
    "X-Webhook-Event",
    "Content-Type",
    "User-Agent",
    "traceparent",
    "Host",
    "Content-Length",
    "Connection",
    "Transfer-Encoding",
    "Upgrade",
    "Proxy-Authorization",
    "TE",
  ])("when a change sets %s, then it is refused naming it", (name) => {
    expect(isReservedHeader(name)).toBe(true);
    expect(refusal(() => applyHeaderChanges({}, { [name]: "x" }))).toEqual({ path: `headers.${name}` });
  });

  it("when a receiver's own headers are set (Authorization, X-Api-Key, X-Tenant), then they are allowed", () => {
    for (const name of ["Authorization", "X-Api-Key", "X-Tenant", "Cookie"]) expect(isReservedHeader(name)).toBe(false);
  });

  it(`when a change would leave more than ${MAX_CUSTOM_HEADERS}, then it is refused naming headers; removing some in the same change counts`, () => {
    const ten = Object.fromEntries(Array.from({ length: MAX_CUSTOM_HEADERS }, (_, i) => [`X-H${i}`, String(i)]));
    expect(refusal(() => applyHeaderChanges(ten, { "X-One-More": "1" }))).toEqual({ path: "headers" });
    expect(Object.keys(applyHeaderChanges(ten, { "X-One-More": "1", "X-H0": null }))).toHaveLength(MAX_CUSTOM_HEADERS);
  });

  it("when headers are stored, then the names stay in clear and the values are sealed; sent, they come first and ours are intact", () => {
    const stored = sealHeaders({ Authorization: "Bearer secret-token", "X-Tenant": "acme" }, box);
    expect(stored.names).toEqual(["Authorization", "X-Tenant"]);
    expect(SecretBox.isSealed(stored.sealed!)).toBe(true);
    expect(stored.sealed).not.toContain("secret-token");
    expect(openHeaders(stored.sealed, box)).toEqual({ Authorization: "Bearer secret-token", "X-Tenant": "acme" });
    expect(sealHeaders({}, box)).toEqual({ names: [], sealed: null });
    expect(openHeaders(null, box)).toEqual({});

    const sent = webhookHeaders({
      url: "https://hooks.example.com/x",
      event: "sales_order_created",
      key: "whk_k",
      secret: `whsec_${Buffer.alloc(24).toString("base64")}`,
      webhookId: "msg_1",
      body: "{}",
      customHeaders: JSON.stringify({ Authorization: "Bearer secret-token" }),
    });
    expect(Object.keys(sent)[0]).toBe("Authorization");
    expect(sent).toMatchObject({
      Authorization: "Bearer secret-token",
      "X-WEBHOOK-KEY": "whk_k",
      "webhook-id": "msg_1",
    });
  });
});
