/**
 * What the parts of the webhooks service share: the settings the composition root builds it
 * with, and what its action handlers see as `this` (webhooks.service.ts assembles its schema from
 * the action modules: subscriptions, deliveries, recoveries).
 */
import type { Knex } from "knex";
import type { ActionSchema, Service } from "moleculer";
import type { Config } from "../../shared/config/config";
import type { GroupCommit } from "../../shared/database/group-commit";
import type { DeliveredEventName } from "../../shared/messaging/events";
import { NotFoundError } from "../../shared/errors";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import type { SecretBox } from "../../shared/security/secret-box";
import type { KeyConfig } from "../../shared/security/secrets-keyring";
import type { StorageSettings } from "../../shared/service-settings";
import type { ClientGrants } from "./webhooks.grants";
import type { SubscriptionListeners } from "./webhooks.listeners";
import { findSubscription, type SubscriptionRow } from "./webhooks.subscriptions.repository";
import type { WebhooksWorker } from "./webhooks.worker";

/** What the composition root builds this service with (runtime/settings-from-config.ts). */
export interface WebhooksSettings extends StorageSettings {
  webhooks: Config["webhooks"];
  /** DATABASE_URL and SECRETS_ENCRYPTION_KEYS: which keys seal the stored secrets (shared/security/secrets-keyring.ts). */
  secrets: KeyConfig;
  /**
   * Each event's body as a self-contained JSON Schema (2020-12), for the event catalogue: the
   * composition root reads them from every service's representation schemas (runtime/services.ts).
   */
  eventBodies: Readonly<Record<DeliveredEventName, Record<string, unknown>>>;
}

/** The service's own state beside `db` (databaseMixin's). */
export interface WebhooksState {
  /** The background side, built when the service starts (webhooks.worker.ts). */
  worker?: WebhooksWorker;
  grants: ClientGrants;
  /** Who listens to each event, for fan-out (webhooks.listeners.ts). */
  listeners: SubscriptionListeners;
  /** The fan-outs' statements: those that arrive together commit together. */
  fanOutWrites: GroupCommit;
  /** The worker's: seals the keys and secrets that are stored. */
  secrets: SecretBox;
}

/** `this` in an action handler. */
export type WebhooksThis = Service & { db: Knex } & WebhooksState;

/** Some of the service's actions, by name. */
export type WebhooksActions = Record<string, ActionSchema<WebhooksThis>>;

/** The caller's subscription. Another client's is "not found", never "forbidden": its existence is not revealed. */
export async function ownSubscription(db: Knex, ctx: RequestContext, id: number): Promise<SubscriptionRow> {
  const row = await findSubscription(db, callerOf(ctx).clientId, id);
  if (!row) throw new NotFoundError("webhook subscription", id);
  return row;
}
