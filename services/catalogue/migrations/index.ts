import type { Migration } from "../../../shared/database/db";
import * as createCatalogue from "./20261121000200_create_catalogue";

export const migrations: Migration[] = [{ name: "20261121000200_create_catalogue", ...createCatalogue }];
