import type { Migration } from "../../../shared/database/db";
import * as createClients from "./20261121000000_create_clients";

export const migrations: Migration[] = [{ name: "20261121000000_create_clients", ...createClients }];
