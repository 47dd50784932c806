/**
 * A stand-in for a service that raises domain events: its own schema with an outbox, and the
 * outbox relay a real service mixes in. Tests append events to it (in one transaction, as the
 * orders service does) and the relay publishes them on the channels, in process or over NATS.
 */
import type { Knex } from "knex";
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { databaseMixin } from "../../shared/database/database.mixin";
import { openDatabase, type Migration } from "../../shared/database/db";
import { config } from "../../shared/config/config";
import { outboxRelayMixin } from "../../shared/messaging/outbox-relay.mixin";
import { storageSettingsOf } from "../../shared/service-settings";
import type { EventName } from "../../shared/messaging/events";
import {
  addOutboxClaims,
  addOutboxTraceparent,
  appendEvent,
  createOutboxTable,
  dropOutboxClaims,
  dropOutboxTable,
  dropOutboxTraceparent,
} from "../../shared/messaging/outbox";
import { createJobRunsTable, dropJobRunsTable } from "../../shared/database/periodic-job";

export interface TestEvent {
  event: EventName;
  ownerClientId: number;
  /** The webhook body; must identify the event for the test (e.g. `{ seq }`). */
  data: Record<string, unknown>;
  entityId?: number;
}

export interface EventSource {
  schema: string;
  /** Appends the events in one transaction; the relay publishes them after the commit. */
  emit(events: TestEvent[]): Promise<void>;
  /** How many of its events the relay has not published yet. */
  unpublished(): Promise<number>;
}

/** The outbox as a service's migrations make it. */
function outboxMigrations(schema: string): Migration[] {
  return [
    {
      name: `00000000000000_${schema}_outbox`,
      up: (knex: Knex) => createOutboxTable(knex, schema),
      down: (knex: Knex) => dropOutboxTable(knex, schema),
    },
    {
      name: `00000000000001_${schema}_outbox_claims`,
      up: (knex: Knex) => addOutboxClaims(knex, schema),
      down: (knex: Knex) => dropOutboxClaims(knex, schema),
    },
    {
      name: `00000000000003_${schema}_outbox_traceparent`,
      up: (knex: Knex) => addOutboxTraceparent(knex, schema),
      down: (knex: Knex) => dropOutboxTraceparent(knex, schema),
    },
    // The relay's outbox retention claims its runs here.
    {
      name: `00000000000002_${schema}_job_runs`,
      up: (knex: Knex) => createJobRunsTable(knex, schema),
      down: (knex: Knex) => dropJobRunsTable(knex, schema),
    },
  ];
}

/** Adds the source to a broker (started or not) and resolves once it has started. */
export async function addEventSource(broker: ServiceBroker, schema = "test_source"): Promise<EventSource> {
  const service: ServiceSchema = {
    name: `source-${schema}`,
    mixins: [databaseMixin(schema, outboxMigrations(schema)), outboxRelayMixin(schema)],
    // The settings of the broker's configuration, as the composition root gives its services.
    settings: storageSettingsOf(config()),
  };
  broker.createService(service);
  await broker.waitForServices([service.name], 30_000);
  const db = openDatabase(config().databaseUrl);
  return {
    schema,
    async emit(events) {
      await db.transaction(async (trx) => {
        // Batches, so a burst of hundreds stays one transaction with few statements.
        for (const e of events) {
          await appendEvent(trx, schema, {
            event: e.event,
            ownerClientId: e.ownerClientId,
            entityId: e.entityId ?? 1,
            data: e.data,
          });
        }
      });
    },
    async unpublished() {
      const row = (await db.withSchema(schema).table("outbox").whereNull("published_at").count({ n: "*" }).first()) as {
        n: number | string;
      };
      return Number(row.n);
    },
  };
}
