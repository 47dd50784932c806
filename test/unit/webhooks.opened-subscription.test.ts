/**
 * The sender's opened subscriptions (webhooks.opened-subscription.ts): each snapshot of a
 * subscription's sealed values is opened once and kept by its sealed text; opening that fails
 * keeps nothing; what is kept signs and heads requests as the values in clear would.
 */
import { Webhook } from "standardwebhooks";
import {
  newEncryptionKeyEntry,
  parseEncryptionKeys,
  SecretBox,
  SecretBoxError,
} from "../../shared/security/secret-box";
import { openedSubscription, type SubscriptionValues } from "../../services/webhooks/webhooks.opened-subscription";
import { generateKey, generateSecret, generateSigningKeyPair } from "../../services/webhooks/webhooks.signing";

const box = new SecretBox(parseEncryptionKeys([newEncryptionKeyEntry("k1")], "SECRETS_ENCRYPTION_KEYS").keys);

/** An opener that counts what it opens, and fails while `failing` is set. */
function countingOpener() {
  const opened: string[] = [];
  const opener = {
    failing: false,
    opened,
    open(sealed: string): string {
      opened.push(sealed);
      if (opener.failing) throw new SecretBoxError("The key is gone.");
      return box.open(sealed);
    },
  };
  return opener;
}

function sealedSubscription(): { sealed: SubscriptionValues; key: string; secret: string } {
  const key = generateKey();
  const secret = generateSecret();
  return {
    key,
    secret,
    sealed: {
      event: "sales_order_validated",
      key: box.seal(key),
      secret: box.seal(secret),
      customHeaders: box.seal(JSON.stringify({ Authorization: "Bearer t" })),
    },
  };
}

describe("opened subscriptions", () => {
  it("when the same sealed values are sent with again and again, then each is opened once", () => {
    const opener = countingOpener();
    const { sealed } = sealedSubscription();
    // Fresh strings each time, as each claimed row brings them.
    for (let i = 0; i < 5; i++) expect(openedSubscription(structuredClone(sealed), opener)).not.toHaveProperty("error");
    expect(opener.opened.sort()).toEqual([sealed.key, sealed.secret, sealed.customHeaders].sort());
  });

  it("when a rotation stores new sealed values, then they are opened (once), the previous ones with them", () => {
    const opener = countingOpener();
    const { sealed } = sealedSubscription();
    openedSubscription(sealed, opener);
    const next = { ...sealed, key: box.seal(generateKey()), secret: box.seal(generateSecret()) };
    const rotated = { ...next, previous: { key: sealed.key, secret: sealed.secret } };
    openedSubscription(rotated, opener);
    openedSubscription(rotated, opener);
    expect(opener.opened).toHaveLength(3 + 5);
    expect(opener.opened.filter((s) => s === next.key)).toHaveLength(1);
  });

  it("when opening fails, then the attempt gets the error and nothing is kept: the next attempt opens again", () => {
    const opener = countingOpener();
    const { sealed } = sealedSubscription();
    opener.failing = true;
    expect(openedSubscription(sealed, opener)).toEqual({ error: "The key is gone." });
    expect(openedSubscription(sealed, opener)).toEqual({ error: "The key is gone." });
    expect(opener.opened).toHaveLength(2);
    opener.failing = false;
    expect(openedSubscription(sealed, opener)).not.toHaveProperty("error");
    expect(openedSubscription(sealed, opener)).not.toHaveProperty("error");
    expect(opener.opened).toHaveLength(2 + 3);
  });

  it("when custom headers do not parse, then the attempt gets an error rather than a throw, and it quotes none of them", () => {
    const { sealed } = sealedSubscription();
    const opened = openedSubscription({ ...sealed, customHeaders: box.seal('{"Authorization": Bearer s3cret}') }, box);
    expect(opened).toEqual({ error: "The subscription's stored values could not be used (SyntaxError)." });
  });

  it("when opened, then the fixed headers are axios's Accept, ours and the custom ones, and the signer verifies with both generations", () => {
    const current = sealedSubscription();
    const replaced = sealedSubscription();
    const pair = generateSigningKeyPair();
    const opened = openedSubscription(
      {
        ...current.sealed,
        signingKey: box.seal(pair.privateKey),
        previous: { key: replaced.sealed.key, secret: replaced.sealed.secret },
      },
      box,
    );
    if ("error" in opened) throw new Error(opened.error);
    expect(opened.headers).toEqual({
      Accept: "application/json, text/plain, */*",
      "Content-Type": "application/json",
      Authorization: "Bearer t",
      "User-Agent": expect.stringMatching(/\//),
      "X-WEBHOOK-EVENT": "sales_order_validated",
      "X-WEBHOOK-KEY": current.key,
      "X-WEBHOOK-PREVIOUS-KEY": replaced.key,
    });
    expect(opened.sentKeys).toEqual([current.key, replaced.key]);

    const body = JSON.stringify({ id: 1 });
    const at = new Date();
    const timestamp = Math.floor(at.getTime() / 1000);
    const signature = opened.sign("msg_1", timestamp, body);
    expect(signature.split(" ").map((s) => s.split(",")[0])).toEqual(["v1a", "v1", "v1"]);
    const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(timestamp), "webhook-signature": signature };
    for (const secret of [current.secret, replaced.secret])
      expect(new Webhook(secret).verify(body, headers)).toEqual({ id: 1 });
  });
});
