/**
 * JSON Schema (2020-12) of a background import (orders.import-representation.ts): the body of
 * GET /order_imports/{id}, of the 202 of POST /order_imports and of `order_import_completed`;
 * and of one line of GET /order_imports/{id}/results.
 */
const timestamp = { type: "string", format: "date-time" } as const;
const nullableTimestamp = { type: ["string", "null"], format: "date-time" } as const;
const count = (description: string) => ({ type: "integer", minimum: 0, description }) as const;

export const OrderImport = {
  type: "object",
  description:
    "A background import of orders (NDJSON, one order per line) and how far it got. Also the body of the order_import_completed webhook.",
  examples: [
    {
      id: 7,
      status: "completed",
      total: 3,
      processed: 3,
      created: 1,
      rejected: 1,
      duplicates: 1,
      createdAt: "2026-12-15T04:00:00.000Z",
      queuedAt: "2026-12-15T04:00:01.000Z",
      startedAt: "2026-12-15T04:00:01.000Z",
      finishedAt: "2026-12-15T04:00:02.000Z",
    },
  ],
  required: [
    "id",
    "status",
    "total",
    "processed",
    "created",
    "rejected",
    "duplicates",
    "createdAt",
    "queuedAt",
    "startedAt",
    "finishedAt",
  ],
  properties: {
    id: { type: "integer" },
    status: {
      enum: ["queued", "running", "completed", "failed"],
      description:
        "queued → running → completed; failed when its lines could not be taken after repeated attempts on our side (the lines taken keep their results).",
    },
    total: count("Lines (orders) uploaded; blank lines are not counted."),
    processed: count("Lines with a result so far: created + rejected + duplicates."),
    created: count("Lines whose order was created (result status 201)."),
    rejected: count("Lines refused (result status 400, 403, 422)."),
    duplicates: count("Lines whose externalId names an order already sent (result status 409)."),
    createdAt: timestamp,
    queuedAt: { ...nullableTimestamp, description: "When the whole upload was stored." },
    startedAt: { ...nullableTimestamp, description: "When a worker first took it up." },
    finishedAt: nullableTimestamp,
  },
  additionalProperties: false,
} as const;

export const OrderImportResult = {
  type: "object",
  description:
    "The result of one line of an import (one NDJSON line of GET /order_imports/{id}/results): what a single POST /orders of it answered.",
  required: ["index", "status"],
  properties: {
    index: { type: "integer", minimum: 0, description: "The line's place among the upload's order lines, from 0." },
    status: { type: "integer", description: "201 created; 409 duplicate externalId; 400, 403, 422 refused." },
    order: { $ref: "#/components/schemas/Order", description: "The created order, as it is now (status 201)." },
    problem: { $ref: "#/components/schemas/Problem", description: "Why the line was refused (status ≠ 201)." },
  },
  additionalProperties: false,
} as const;
