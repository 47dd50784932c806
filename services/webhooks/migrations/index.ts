import type { Migration } from "../../../shared/db";
import * as createWebhooks from "./20261121000500_create_webhooks";

export const migrations: Migration[] = [{ name: "20261121000500_create_webhooks", ...createWebhooks }];
