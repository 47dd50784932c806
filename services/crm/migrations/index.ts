import type { Migration } from "../../../shared/database/db";
import * as createCrm from "./20261121000100_create_crm";
import * as recordsOwnedByClients from "./20261124000100_records_owned_by_clients";

export const migrations: Migration[] = [
  { name: "20261121000100_create_crm", ...createCrm },
  { name: "20261124000100_records_owned_by_clients", ...recordsOwnedByClients },
];
