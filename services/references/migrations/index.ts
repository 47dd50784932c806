import type { Migration } from "../../../shared/db";
import * as createReferences from "./20261121000300_create_references";
import * as outboxClaims from "./20261125000000_outbox_claims";
import * as outboxRetention from "./20261202000000_outbox_retention";

export const migrations: Migration[] = [
  { name: "20261121000300_create_references", ...createReferences },
  { name: "20261125000000_outbox_claims", ...outboxClaims },
  { name: "20261202000000_outbox_retention", ...outboxRetention },
];
