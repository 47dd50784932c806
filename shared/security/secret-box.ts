/**
 * Secrets at rest: values the service must read back in clear (webhook signing secrets and
 * X-WEBHOOK-KEY values: they sign and are sent, so they cannot be hashed) are stored sealed with
 * AES-256-GCM. A sealed value names the key that sealed it, so keys can be rotated: the first
 * key seals, every key opens.
 *
 *   v1.<keyId>.<iv>.<tag>.<ciphertext>        (iv, tag, ciphertext in base64url)
 *
 * A key is written `<keyId>:<base64 of 32 bytes>` (SECRETS_ENCRYPTION_KEYS, docs/operations.md).
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { ExpiringCache } from "../expiring-cache";

export interface EncryptionKey {
  id: string;
  key: Buffer;
}

const FORMAT = "v1";
const ALGORITHM = "aes-256-gcm";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const SEALED = /^v1\.([A-Za-z0-9_-]{1,32})\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]*)$/;

/** A stored value that cannot be opened: an unknown key id, a damaged value, or not sealed at all. */
export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretBoxError";
  }
}

/**
 * Parses `<keyId>:<base64 32 bytes>` entries; returns the keys, or the problems naming the
 * variable they came from (a key is never quoted in a message).
 */
export function parseEncryptionKeys(
  entries: readonly string[],
  variable: string,
): { keys: EncryptionKey[]; problems: string[] } {
  const keys: EncryptionKey[] = [];
  const problems: string[] = [];
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(":");
    const id = colon < 0 ? "" : entry.slice(0, colon);
    const key = Buffer.from(colon < 0 ? "" : entry.slice(colon + 1), "base64");
    if (!KEY_ID.test(id))
      problems.push(`${variable} entry ${i + 1} must be <keyId>:<base64 key>, the key id 1 to 32 of A-Z a-z 0-9 _ -`);
    else if (key.length !== KEY_BYTES)
      problems.push(
        `${variable} key "${id}" must be ${KEY_BYTES} bytes in base64 (openssl rand -base64 32), got ${key.length}`,
      );
    else if (keys.some((k) => k.id === id)) problems.push(`${variable} names the key id "${id}" twice`);
    else keys.push({ id, key });
  });
  return { keys, problems };
}

/** A fresh key, written as SECRETS_ENCRYPTION_KEYS reads it. */
export function newEncryptionKeyEntry(id: string): string {
  return `${id}:${randomBytes(KEY_BYTES).toString("base64")}`;
}

export class SecretBox {
  private readonly byId: Map<string, Buffer>;

  /** `keys[0]` seals; every key opens. */
  constructor(private readonly keys: readonly EncryptionKey[]) {
    if (keys.length === 0) throw new SecretBoxError("A secret box needs at least one key.");
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  get currentKeyId(): string {
    return this.keys[0].id;
  }

  seal(plain: string): string {
    const { id, key } = this.keys[0];
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, key, iv);
    const ciphertext = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return [
      FORMAT,
      id,
      iv.toString("base64url"),
      cipher.getAuthTag().toString("base64url"),
      ciphertext.toString("base64url"),
    ].join(".");
  }

  open(sealed: string): string {
    const parts = SEALED.exec(sealed);
    if (!parts)
      throw new SecretBoxError(
        "A stored secret is not in the encrypted form (v1.<keyId>....): have the migrations run?",
      );
    const [, id, iv, tag, ciphertext] = parts;
    const key = this.byId.get(id);
    if (!key) {
      throw new SecretBoxError(
        `A stored secret was encrypted with the key "${id}", which is not among the configured keys (${[...this.byId.keys()].join(", ")}): add it back to SECRETS_ENCRYPTION_KEYS.`,
      );
    }
    try {
      const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]).toString("utf8");
    } catch {
      throw new SecretBoxError(
        `A stored secret does not open with the key "${id}": the value is damaged or the key under that id changed.`,
      );
    }
  }

  static isSealed(value: string): boolean {
    return SEALED.test(value);
  }

  /** The value sealed with the current key: unchanged when it already is, sealed when it was plain. */
  reseal(value: string): string {
    if (!SecretBox.isSealed(value)) return this.seal(value);
    return SEALED.exec(value)?.[1] === this.currentKeyId ? value : this.seal(this.open(value));
  }
}

/** How long an opened value is kept by `rememberingOpener`, and how many at most. */
export const OPENED_KEPT_FOR_MS = 60_000;
const MAX_OPENED = 10_000;

/**
 * `box.open`, remembering what it opened for OPENED_KEPT_FOR_MS, by the sealed text: a busy
 * sender opens the same few values for every request (an AES-GCM decryption each). A sealed
 * value never changes meaning (rotating stores new ones), so nothing remembered is ever wrong;
 * a key taken out of SECRETS_ENCRYPTION_KEYS stops opening values at most that long later.
 * Failures are not remembered.
 */
export function rememberingOpener(box: Pick<SecretBox, "open">): Pick<SecretBox, "open"> {
  const opened = new ExpiringCache<string, string>(OPENED_KEPT_FOR_MS, MAX_OPENED);
  return {
    open(sealed: string): string {
      const known = opened.get(sealed);
      if (known !== undefined) return known;
      const plain = box.open(sealed);
      opened.set(sealed, plain);
      return plain;
    },
  };
}
