import type { Migration } from "../../../shared/database/db";
import * as createWebhooks from "./20261121000500_create_webhooks";
import * as vacuumDeliveriesOften from "./20261122000000_vacuum_deliveries_often";
import * as dueDeliveriesBySubscription from "./20261123000000_due_deliveries_by_subscription";
import * as grantsAtFanout from "./20261123000100_grants_at_fanout";
import * as encryptSecrets from "./20261124000000_encrypt_secrets";
import * as rotationOverlapSignaturesRecoveries from "./20261201000000_rotation_overlap_signatures_recoveries";
import * as endpointHealth from "./20261202000100_endpoint_health";
import * as retention from "./20261202000200_retention";
import * as traceparent from "./20261205000000_traceparent";
import * as deliverySearch from "./20261210000010_delivery_search";
import * as attemptAnswers from "./20261210000011_attempt_answers";
import * as idempotentActions from "./20261210000012_idempotent_actions";
import * as editableSubscriptions from "./20261210000020_editable_subscriptions";
import * as outboxPositions from "./20261215010000_outbox_positions";
import * as oneWebhookIdPerEvent from "./20261215010001_one_webhook_id_per_event";
import * as perEntityOrdering from "./20261215020000_per_entity_ordering";
import * as statsSeries from "./20261215050010_stats_series";
import * as deliveryPathKeyChecks from "./20261227000000_delivery_path_key_checks";
import * as fewerDeliveryIndexes from "./20261227000100_fewer_delivery_indexes";
import * as lineHoldsTheUnsettled from "./20261228000000_line_holds_the_unsettled";

export const migrations: Migration[] = [
  { name: "20261121000500_create_webhooks", ...createWebhooks },
  { name: "20261122000000_vacuum_deliveries_often", ...vacuumDeliveriesOften },
  { name: "20261123000000_due_deliveries_by_subscription", ...dueDeliveriesBySubscription },
  { name: "20261123000100_grants_at_fanout", ...grantsAtFanout },
  { name: "20261124000000_encrypt_secrets", ...encryptSecrets },
  { name: "20261201000000_rotation_overlap_signatures_recoveries", ...rotationOverlapSignaturesRecoveries },
  { name: "20261202000100_endpoint_health", ...endpointHealth },
  { name: "20261202000200_retention", ...retention },
  { name: "20261205000000_traceparent", ...traceparent },
  { name: "20261210000010_delivery_search", ...deliverySearch },
  { name: "20261210000011_attempt_answers", ...attemptAnswers },
  { name: "20261210000012_idempotent_actions", ...idempotentActions },
  { name: "20261210000020_editable_subscriptions", ...editableSubscriptions },
  { name: "20261215010000_outbox_positions", ...outboxPositions },
  { name: "20261215010001_one_webhook_id_per_event", ...oneWebhookIdPerEvent },
  { name: "20261215020000_per_entity_ordering", ...perEntityOrdering },
  { name: "20261215050010_stats_series", ...statsSeries },
  { name: "20261227000000_delivery_path_key_checks", ...deliveryPathKeyChecks },
  { name: "20261227000100_fewer_delivery_indexes", ...fewerDeliveryIndexes },
  { name: "20261228000000_line_holds_the_unsettled", ...lineHoldsTheUnsettled },
];
