/**
 * What a subscription's stored values give the sender once opened: the part of its requests'
 * headers that is the same for every request, its signer, and the keys in clear that an answer
 * must not echo into what is kept. Opening them (an AES-GCM decryption per sealed value,
 * shared/security/secret-box.ts), parsing the custom headers and decoding the signing keys was
 * done for every attempt; it is done once per snapshot of those values and kept, by their sealed
 * text, for the next attempts.
 *
 * Nothing kept can be stale: a sealed text never changes meaning (a rotation or an edit stores
 * new sealed values, so a new entry), and the keys that open them are fixed for the process's
 * life. Opening that fails keeps nothing: the attempt is an `error` and the next one tries again.
 */
import { LRUCache } from "lru-cache";
import { productUserAgent } from "../../shared/product";
import { SecretBoxError, type SecretBox } from "../../shared/security/secret-box";
import { ACCEPT } from "./webhooks.http-client";
import { signerFor, type Signer } from "./webhooks.signing";

/** A subscription's values as a delivery carries them: sealed, or (webhookHeaders, tests) in clear. */
export interface SubscriptionValues {
  event: string;
  /** The X-WEBHOOK-KEY value and the signing secret. */
  key: string;
  secret: string;
  /** Absent or null when the subscription has no Ed25519 key pair. */
  signingKey?: string | null;
  /** What a rotation replaced, while its overlap lasts; absent or null otherwise (webhooks.signing.ts). */
  previous?: { key: string; secret: string; signingKey?: string | null } | null;
  /** The custom headers as one JSON object (webhooks.custom-headers.ts); absent or null when none. */
  customHeaders?: string | null;
}

const CONTENT_TYPE = "application/json";

export interface OpenedSubscription {
  /** Every header but the per-request ones (webhook-id, -timestamp, -signature, traceparent). */
  headers: Readonly<Record<string, string>>;
  sign: Signer;
  /** The keys this subscription's requests carry in clear: never kept from an answer. */
  sentKeys: readonly string[];
}

/**
 * The headers that are the same for every request of a subscription, from its values in clear.
 * During a rotation's overlap the replaced key rides along in X-WEBHOOK-PREVIOUS-KEY, as the
 * replaced secret's signature does in webhook-signature: a receiver accepts either until it has
 * switched (docs/webhooks.md).
 */
export function subscriptionHeaders(v: SubscriptionValues): Record<string, string> {
  return {
    // First, so nothing of ours could be replaced (reserved names are refused anyway).
    ...(v.customHeaders ? (JSON.parse(v.customHeaders) as Record<string, string>) : {}),
    "Content-Type": CONTENT_TYPE,
    "User-Agent": productUserAgent(),
    "X-WEBHOOK-EVENT": v.event,
    "X-WEBHOOK-KEY": v.key,
    ...(v.previous ? { "X-WEBHOOK-PREVIOUS-KEY": v.previous.key } : {}),
  };
}

/** The subscription's values in clear: what webhookHeaders and the signer read. */
export function openedValues(sealed: SubscriptionValues, secrets: Pick<SecretBox, "open">): SubscriptionValues {
  const open = (value: string | null | undefined) => (value ? secrets.open(value) : null);
  return {
    event: sealed.event,
    key: secrets.open(sealed.key),
    secret: secrets.open(sealed.secret),
    signingKey: open(sealed.signingKey),
    customHeaders: open(sealed.customHeaders),
    previous: sealed.previous && {
      key: secrets.open(sealed.previous.key),
      secret: secrets.open(sealed.previous.secret),
      signingKey: open(sealed.previous.signingKey),
    },
  };
}

function opening(sealed: SubscriptionValues, secrets: Pick<SecretBox, "open">): OpenedSubscription {
  const clear = openedValues(sealed, secrets);
  return {
    // Accept and Content-Type first, where axios's defaults placed them, so the request is the
    // same on the wire as before; a custom Accept still replaces axios's.
    headers: { Accept: ACCEPT, "Content-Type": CONTENT_TYPE, ...subscriptionHeaders(clear) },
    sign: signerFor(clear),
    sentKeys: clear.previous ? [clear.key, clear.previous.key] : [clear.key],
  };
}

/**
 * Subscriptions kept opened, per opener: beyond it the least recently sent to is opened again on
 * its next attempt. An entry is a few hundred bytes of headers and keys.
 */
export const MAX_OPENED_SUBSCRIPTIONS = 10_000;

const openedBy = new WeakMap<Pick<SecretBox, "open">, LRUCache<string, OpenedSubscription>>();

/** Sealed values are base64url and dots, event names words: a line break cannot occur in either. */
const snapshotId = (v: SubscriptionValues) =>
  [
    v.event,
    v.key,
    v.secret,
    v.signingKey ?? "",
    v.customHeaders ?? "",
    v.previous?.key ?? "",
    v.previous?.secret ?? "",
    v.previous?.signingKey ?? "",
  ].join("\n");

/** The subscription opened (once per snapshot of its sealed values), or why it cannot be. */
export function openedSubscription(
  sealed: SubscriptionValues,
  secrets: Pick<SecretBox, "open">,
): OpenedSubscription | { error: string } {
  let memo = openedBy.get(secrets);
  if (!memo) {
    memo = new LRUCache({ max: MAX_OPENED_SUBSCRIPTIONS });
    openedBy.set(secrets, memo);
  }
  const id = snapshotId(sealed);
  try {
    const known = memo.get(id);
    if (known) return known;
    // Kept only once opened: an opening that throws keeps nothing.
    const opened = opening(sealed, secrets);
    memo.set(id, opened);
    return opened;
  } catch (err) {
    // A SecretBoxError names the key, never the value; anything else (custom headers that do not
    // parse, a damaged signing key) could quote what it read, which is secret: only its kind is told.
    const error =
      err instanceof SecretBoxError
        ? err.message
        : `The subscription's stored values could not be used (${(err as Error).name}).`;
    return { error };
  }
}
