/**
 * What the composition root (runtime/settings-from-config.ts) hands each service at construction,
 * as its Moleculer `settings`: the service and its mixins read `this.settings`, never the
 * process configuration, so a test can build a service with other settings without touching
 * process.env (issue 9, "One declaration per shape"). Only shared/config/config.ts reads the environment.
 */
import type { Config } from "./config/config";

/** Read by databaseMixin (shared/database/database.mixin.ts). */
export interface DatabaseSettings {
  /** DATABASE_URL */
  url: string;
  /** DATABASE_POOL_MAX */
  poolMax: number;
  /** MIGRATE_ON_START */
  migrateOnStart: boolean;
}

/** Read by outboxRelayMixin (shared/messaging/outbox-relay.mixin.ts). */
export interface OutboxSettings {
  /** OUTBOX_RELAY_INTERVAL_MS */
  relayIntervalMs: number;
  /** OUTBOX_STALLED_AFTER: readiness fails once events have not flowed this long. */
  stalledAfterMs: number;
  /** OUTBOX_RETENTION */
  retentionMs: number;
  /** RETENTION_INTERVAL */
  retentionIntervalMs: number;
}

/** The settings every database service is built with. */
export interface StorageSettings {
  database: DatabaseSettings;
  outbox: OutboxSettings;
  /**
   * Moleculer leaves these keys out of the service descriptions it announces to other nodes
   * ($node.services, INFO packets): the database URL may carry a password.
   */
  $secureSettings: string[];
}

/** Settings that must not leave the process, whichever service holds them. */
export const SECURE_SETTINGS = ["database", "adminApiKey", "secrets"] as const;

export function storageSettingsOf(cfg: Config): StorageSettings {
  return {
    database: { url: cfg.databaseUrl, poolMax: cfg.databasePoolMax, migrateOnStart: cfg.migrateOnStart },
    outbox: {
      relayIntervalMs: cfg.outboxRelayIntervalMs,
      stalledAfterMs: cfg.outboxStalledAfterMs,
      retentionMs: cfg.outboxRetentionMs,
      retentionIntervalMs: cfg.retentionIntervalMs,
    },
    $secureSettings: [...SECURE_SETTINGS],
  };
}
