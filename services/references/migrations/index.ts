import type { Migration } from "../../../shared/database/db";
import * as createReferences from "./20261121000300_create_references";
import * as outboxClaims from "./20261125000000_outbox_claims";
import * as outboxRetention from "./20261202000000_outbox_retention";
import * as outboxTraceparent from "./20261205000000_outbox_traceparent";
import * as contactReferenceVersions from "./20261215000000_contact_reference_versions";
import * as outboxPositions from "./20261215010000_outbox_positions";

export const migrations: Migration[] = [
  { name: "20261121000300_create_references", ...createReferences },
  { name: "20261125000000_outbox_claims", ...outboxClaims },
  { name: "20261202000000_outbox_retention", ...outboxRetention },
  { name: "20261205000000_outbox_traceparent", ...outboxTraceparent },
  { name: "20261215000000_contact_reference_versions", ...contactReferenceVersions },
  { name: "20261215010000_outbox_positions", ...outboxPositions },
];
