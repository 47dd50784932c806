/**
 * orders: intake (POST /orders, POST /orders/batch), reading, and the validate / cancel lifecycle. Each change
 * writes its webhook event to the outbox in the same transaction.
 */
import type { Context } from "moleculer";
import { callerOf, type RequestContext } from "../../shared/security/auth";
import { databaseMixin, type DbServiceSchema } from "../../shared/database/database.mixin";
import { NotFoundError } from "../../shared/errors";
import {
  BROADCASTS,
  type ContactReferencesChangedPayload,
  type ContactsChangedPayload,
} from "../../shared/messaging/events";
import { outboxFeedMixin } from "../../shared/messaging/outbox-feed";
import { outboxRelayMixin } from "../../shared/messaging/outbox-relay.mixin";
import { toPage } from "../../shared/http/paging";
import { respondCreated } from "../../shared/http/responses";
import { markReplayed } from "../../shared/http/idempotency";
import { respondVersion } from "../../shared/http/conditional";
import { placeOrder, type Intake } from "./orders.intake";
import { takeBatch, type BatchAnswer } from "./orders.batch-intake";
import { moveOrder, visibilityFor, type Move } from "./orders.lifecycle";
import { ResolvedReferences } from "./orders.references-cache";
import {
  createOrderParams,
  createOrdersBatchParams,
  BATCH_TIMEOUT_MS,
  listOrdersParams,
  orderIdParams,
  type CreateOrderParams,
  type CreateOrdersBatchParams,
  type ListOrdersParams,
  type OrderIdParams,
} from "./orders.params";
import * as repo from "./orders.repository";
import { lookUpOrders } from "./orders.lookups.repository";
import { presentOrder, type Order } from "./orders.representation";
import { migrations } from "./migrations";
import { importActions, type OrderImportSettings } from "./orders.import-actions";
import { ImportWorker } from "./orders.import-worker";
import { importRetentionJob } from "./orders.import-retention";
import type { StorageSettings } from "../../shared/service-settings";
import type { PeriodicJob } from "../../shared/database/periodic-job";
import { GroupCommit } from "../../shared/database/group-commit";
import type { Principal } from "../../shared/security/auth";

/** What the composition root builds the orders service with (runtime/settings-from-config.ts). */
export interface OrdersSettings extends StorageSettings {
  orderImports: OrderImportSettings;
}

const ordersService: DbServiceSchema<
  {
    move(ctx: RequestContext<OrderIdParams>, move: Move): Promise<Order>;
    intakeOf(ctx: RequestContext<unknown>): Intake;
    importQueued(): void;
    lineIntake(client: Principal): Intake;
  },
  {
    references: ResolvedReferences;
    /** Validations and cancellations: those that arrive together commit together. */
    moves: GroupCommit;
    importWorker?: ImportWorker;
    importRetention?: PeriodicJob;
  }
> = {
  name: "orders",
  mixins: [databaseMixin("orders", migrations), outboxRelayMixin("orders"), outboxFeedMixin("orders")],

  actions: {
    ...importActions,

    create: {
      visibility: "published",
      scope: "orders:write",
      summary: "Create a sales order (201 with the order; Idempotency-Key replays).",
      params: createOrderParams,
      async handler(ctx: RequestContext<CreateOrderParams>): Promise<Order> {
        // The parent context is the gateway's request: a repeat the broker sends keeps it (Context.copy).
        const callId = ctx.parentID ?? undefined;
        const { order, replayed } = await placeOrder({ ...this.intakeOf(ctx), callId }, ctx.params);
        respondCreated(ctx, "orders", order.id);
        respondVersion(ctx.meta, order.version);
        if (replayed) markReplayed(ctx.meta);
        return order;
      },
    },

    createBatch: {
      visibility: "published",
      scope: "orders:write",
      summary:
        "Create up to 500 sales orders in one request: one result per order, in order (Idempotency-Key replays the batch).",
      params: createOrdersBatchParams,
      timeout: BATCH_TIMEOUT_MS,
      async handler(ctx: RequestContext<CreateOrdersBatchParams>): Promise<BatchAnswer> {
        const { answer, replayed } = await takeBatch(this.intakeOf(ctx), ctx.params.orders, ctx.params.errorPolicy);
        if (replayed) markReplayed(ctx.meta);
        return answer;
      },
    },

    get: {
      visibility: "published",
      scope: "orders:read",
      summary: "One order (a partner sees only its own); `ETag` is its version, `If-None-Match` makes it 304.",
      params: orderIdParams,
      async handler(ctx: RequestContext<OrderIdParams>): Promise<Order> {
        const row = await repo.findOrder(this.db, ctx.params.id, visibilityFor(callerOf(ctx)));
        if (!row) throw new NotFoundError("order", ctx.params.id);
        respondVersion(ctx.meta, row.version);
        return presentOrder(row, (await repo.itemsOf(this.db, [row.id])).get(row.id) ?? []);
      },
    },

    list: {
      visibility: "published",
      scope: "orders:read",
      summary:
        "Orders, oldest first (a partner sees only its own); look up by externalId, externalReference, code, time ranges.",
      params: listOrdersParams,
      async handler(ctx: RequestContext<ListOrdersParams>) {
        const { rows, nextCursor } = await lookUpOrders(this.db, visibilityFor(callerOf(ctx)), ctx.params);
        const items =
          rows.length > 0
            ? await repo.itemsOf(
                this.db,
                rows.map((r) => r.id),
              )
            : new Map<number, repo.ItemRow[]>();
        return toPage(
          rows.map((r) => presentOrder(r, items.get(r.id) ?? [])),
          nextCursor,
        );
      },
    },

    validate: {
      visibility: "published",
      scope: "orders:manage",
      summary: "Validate a pending order (`If-Match`: only at that version); raises sales_order_validated.",
      params: orderIdParams,
      handler(ctx: RequestContext<OrderIdParams>) {
        return this.move(ctx, "validate");
      },
    },

    cancel: {
      visibility: "published",
      scope: "orders:manage",
      summary: "Cancel a pending or validated order (`If-Match`: only at that version); raises sales_order_cancelled.",
      params: orderIdParams,
      handler(ctx: RequestContext<OrderIdParams>) {
        return this.move(ctx, "cancel");
      },
    },
  },

  // What orders keeps of the references and contacts it resolved is dropped when they change (orders.references-cache.ts).
  events: {
    [BROADCASTS.contactsChanged.name](ctx: Context<ContactsChangedPayload>) {
      this.references.forgetContacts(ctx.params.ids);
    },
    [BROADCASTS.contactReferencesChanged.name](ctx: Context<ContactReferencesChangedPayload>) {
      this.references.forgetContactReferences(ctx.params.ids);
    },
  },

  created() {
    this.references = new ResolvedReferences();
    // Four of the pool's connections (DATABASE_POOL_MAX, 10 by default): a move that finds one
    // free runs at once, so a busy machine's round trips do not queue behind a single writer; and
    // groups of 8 at most, since a group's moves run one after the other on its connection — with
    // one writer and groups of 32 the answers' p99 doubled at saturation (bench/README.md, issue 23).
    this.moves = new GroupCommit(this.db, { writers: 4, maxGroup: 8 });
  },

  // The import worker and its retention run beside the actions on every replica (orders.import-worker.ts).
  started() {
    const settings = this.settings as OrdersSettings;
    const ready = () => this.broker.started;
    this.importWorker = new ImportWorker({
      db: this.db,
      logger: this.logger,
      intervalMs: settings.outbox.relayIntervalMs,
      ready,
      intakeFor: (client) => this.lineIntake(client),
    });
    this.importRetention = importRetentionJob({
      db: this.db,
      logger: this.logger,
      retentionMs: settings.orderImports.retentionMs,
      everyMs: settings.outbox.retentionIntervalMs,
      ready,
    });
    this.importWorker.start();
    this.importRetention.start();
  },

  async stopped() {
    await Promise.all([this.importWorker?.stop(), this.importRetention?.stop()]);
  },

  methods: {
    /** What the intake needs of this service and of the request: the caller, its key, and calls in its context. */
    intakeOf(ctx: RequestContext<unknown>): Intake {
      return {
        db: this.db,
        call: (action, params) => ctx.call(action, params),
        references: this.references,
        client: callerOf(ctx),
        idempotencyKey: ctx.meta.idempotencyKey,
      };
    },

    async move(ctx: RequestContext<OrderIdParams>, move: Move) {
      const order = await moveOrder(this.moves, callerOf(ctx), ctx.params.id, move, ctx.meta.preconditions);
      respondVersion(ctx.meta, order.version);
      return order;
    },

    importQueued() {
      this.importWorker?.wake();
    },

    /** How the import worker takes lines for `client`: as its POST /orders/batch would be, without a key. */
    lineIntake(client: Principal): Intake {
      return {
        db: this.db,
        call: (action, params) => this.broker.call(action, params, { meta: { client } }),
        references: this.references,
        client,
      };
    },
  },
};

export default ordersService;
