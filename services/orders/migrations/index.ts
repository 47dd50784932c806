import type { Migration } from "../../../shared/database/db";
import * as createOrders from "./20261121000400_create_orders";
import * as externalIdClaims from "./20261124000200_external_id_claims";
import * as outboxClaims from "./20261125000000_outbox_claims";
import * as outboxRetention from "./20261202000000_outbox_retention";
import * as outboxTraceparent from "./20261205000000_outbox_traceparent";
import * as orderLookups from "./20261210000000_order_lookups";
import * as orderVersions from "./20261215000000_order_versions";
import * as outboxPositions from "./20261215010000_outbox_positions";
import * as orderImports from "./20261215040000_order_imports";
import * as ordersTakenByCall from "./20261227000000_orders_taken_by_call";

export const migrations: Migration[] = [
  { name: "20261121000400_create_orders", ...createOrders },
  { name: "20261124000200_external_id_claims", ...externalIdClaims },
  { name: "20261125000000_outbox_claims", ...outboxClaims },
  { name: "20261202000000_outbox_retention", ...outboxRetention },
  { name: "20261205000000_outbox_traceparent", ...outboxTraceparent },
  { name: "20261210000000_order_lookups", ...orderLookups },
  { name: "20261215000000_order_versions", ...orderVersions },
  { name: "20261215010000_outbox_positions", ...outboxPositions },
  { name: "20261215040000_order_imports", ...orderImports },
  { name: "20261227000000_orders_taken_by_call", ...ordersTakenByCall },
];
