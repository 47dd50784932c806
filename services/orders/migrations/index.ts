import type { Migration } from "../../../shared/db";
import * as createOrders from "./20261121000400_create_orders";

export const migrations: Migration[] = [{ name: "20261121000400_create_orders", ...createOrders }];
