import type { Migration } from "../../../shared/db";
import * as createWebhooks from "./20261121000500_create_webhooks";
import * as vacuumDeliveriesOften from "./20261122000000_vacuum_deliveries_often";

export const migrations: Migration[] = [
  { name: "20261121000500_create_webhooks", ...createWebhooks },
  { name: "20261122000000_vacuum_deliveries_often", ...vacuumDeliveriesOften },
];
