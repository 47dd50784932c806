/**
 * The event contract (shared/messaging/events.ts) is the one home of every event: what it declares is what
 * the code does (channels, producers, listeners), what subscribers are shown (catalogue, OpenAPI),
 * and no other source file spells a channel or broadcast name of its own.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { ServiceSchema } from "moleculer";
import { buildOpenApiDocument } from "../../gateway/openapi/document";
import { gatewaySchema } from "../../gateway/gateway.service";
import { SERVICE_DESCRIPTIONS } from "../../runtime/services";
import { ALL_CHANNELS } from "../../shared/messaging/channels";
import { loadConfig } from "../../shared/config/config";
import {
  BROADCASTS,
  channelOf,
  DOMAIN_EVENTS,
  EVENTS,
  SUBSCRIPTION_EVENT_NAMES,
  SUBSCRIPTION_EVENTS,
  type EventName,
} from "../../shared/messaging/events";
import { startingWith } from "../helpers/matchers";
import catalogue from "../../services/catalogue/catalogue.service";
import clients from "../../services/clients/clients.service";
import crm from "../../services/crm/crm.service";
import orders from "../../services/orders/orders.service";
import references from "../../services/references/references.service";
import webhooks from "../../services/webhooks/webhooks.service";
import { availableEvents, describeEvent } from "../../services/webhooks/webhooks.audience";
import type { Principal } from "../../shared/security/auth";

const ROOT = path.resolve(__dirname, "../..");

/** Every TypeScript source file of the services, the gateway, shared/ and runtime/ (tests excluded). */
function sourceFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) return walk(relative);
      return entry.name.endsWith(".ts") ? [relative] : [];
    });
  return ["services", "gateway", "shared", "runtime"].flatMap(walk);
}

const sources = new Map(sourceFiles().map((file) => [file, readFileSync(path.join(ROOT, file), "utf8")]));

/** The files that spell `name` as a string literal (comments may name it in backquotes). */
function filesSpelling(name: string): string[] {
  const literal = new RegExp(`["']${name.replace(/\./g, "\\.")}["']`);
  return [...sources]
    .filter(([, text]) => literal.test(text))
    .map(([file]) => file)
    .sort();
}

const serviceSchemas: Record<string, Partial<ServiceSchema>> = {
  catalogue,
  clients,
  crm,
  orders,
  references,
  webhooks,
  gateway: gatewaySchema(SERVICE_DESCRIPTIONS, loadConfig({})),
} as Record<string, Partial<ServiceSchema>>;

describe("the event contract", () => {
  it("when a domain event is declared, then its channel is `<entity>.<past tense>` of its entity, and no two events share one", () => {
    for (const event of EVENTS) {
      const { channel, entity } = DOMAIN_EVENTS[event];
      expect({ event, channel }).toEqual({
        event,
        channel: expect.stringMatching(new RegExp(`^${entity}\\.[a-z]+ed$`)),
      });
    }
    const channels = EVENTS.map(channelOf);
    expect(channels.filter((channel, i) => channels.indexOf(channel) !== i)).toEqual([]);
    expect([...ALL_CHANNELS].sort()).toEqual([...channels].sort());
  });

  it("when a channel or broadcast name is needed, then only shared/messaging/events.ts spells it", () => {
    const names = [...EVENTS.map(channelOf), ...Object.values(BROADCASTS).map((b) => b.name)];
    for (const name of names)
      expect({ name, spelledIn: filesSpelling(name) }).toEqual({ name, spelledIn: ["shared/messaging/events.ts"] });
  });

  it("when a service appends an event to its outbox, then the contract names that service as the event's producer", () => {
    // appendEvent inserts the row in a transaction; outboxRow makes it for a statement that writes the change too.
    const appending = [...sources].filter(
      ([file, text]) => file.startsWith("services/") && (text.includes("appendEvent(") || text.includes("outboxRow(")),
    );
    const appended = new Set<EventName>();
    for (const [file, text] of appending) {
      const service = file.split(path.sep)[1];
      for (const event of EVENTS.filter((e) => text.includes(`"${e}"`))) {
        appended.add(event);
        expect({ event, appendedBy: service }).toEqual({ event, appendedBy: DOMAIN_EVENTS[event].producer });
      }
    }
    expect([...appended].sort()).toEqual([...EVENTS].sort());
  });

  it("when a broadcast is declared, then exactly its declared listeners handle it, and no service listens to anything undeclared", () => {
    const declared = new Set<string>(Object.values(BROADCASTS).map((b) => b.name));
    // What a service hears: its own handlers and its mixins' (an outbox relay's, say), but
    // moleculer's own `$` events (moleculer-web's `$services.changed`).
    const heardBy = (schema: (typeof serviceSchemas)[string]): string[] =>
      [
        ...Object.keys(schema.events ?? {}),
        ...((schema.mixins ?? []) as { events?: object }[]).flatMap((mixin) => Object.keys(mixin.events ?? {})),
      ].filter((name) => !name.startsWith("$"));
    for (const [service, schema] of Object.entries(serviceSchemas)) {
      const heard = heardBy(schema);
      expect({ service, undeclared: heard.filter((name) => !declared.has(name)) }).toEqual({ service, undeclared: [] });
    }
    for (const broadcast of Object.values(BROADCASTS)) {
      const listeners = Object.entries(serviceSchemas)
        .filter(([, schema]) => heardBy(schema).includes(broadcast.name))
        .map(([s]) => s);
      expect({ broadcast: broadcast.name, listeners: listeners.sort() }).toEqual({
        broadcast: broadcast.name,
        listeners: [...broadcast.listeners].sort(),
      });
    }
  });

  it("when a client may hear every event, then the webhook catalogue lists them in the contract's order with the contract's meaning", () => {
    const everything: Principal = {
      clientId: 1,
      name: "all",
      kind: "backoffice",
      scopes: ["webhooks"],
      webhookEvents: [...EVENTS],
    };
    expect(availableEvents(everything).map(describeEvent)).toEqual(
      Object.entries(DOMAIN_EVENTS).map(([event, declared]) => ({ event, description: declared.meaning })),
    );
  });

  it("when the OpenAPI document describes the webhooks, then each event's request carries the contract's summary, meaning and body schema", () => {
    const document = buildOpenApiDocument(SERVICE_DESCRIPTIONS) as unknown as {
      webhooks: Record<
        string,
        {
          post: {
            summary: string;
            description: string;
            requestBody: { content: Record<string, { schema: { $ref: string } }> };
          };
        }
      >;
      components: { schemas: Record<string, unknown> };
    };
    // The domain events, then those about a subscription itself (webhook_test).
    expect(Object.keys(document.webhooks)).toEqual([...EVENTS, ...SUBSCRIPTION_EVENT_NAMES]);
    for (const event of SUBSCRIPTION_EVENT_NAMES) {
      const { post } = document.webhooks[event];
      const declared = SUBSCRIPTION_EVENTS[event];
      expect({
        event,
        summary: post.summary,
        bodyRef: post.requestBody.content["application/json"].schema.$ref,
      }).toEqual({
        event,
        summary: declared.summary,
        bodyRef: `#/components/schemas/${declared.body}`,
      });
      expect({ event, description: post.description }).toEqual({ event, description: startingWith(declared.meaning) });
      expect(Object.keys(document.components.schemas)).toContain(declared.body);
    }
    for (const event of EVENTS) {
      const { post } = document.webhooks[event];
      const declared = DOMAIN_EVENTS[event];
      const bodyRef = post.requestBody.content["application/json"].schema.$ref;
      expect({ event, summary: post.summary, bodyRef }).toEqual({
        event,
        summary: declared.summary,
        bodyRef: `#/components/schemas/${declared.body}`,
      });
      expect({ event, description: post.description }).toEqual({ event, description: startingWith(declared.meaning) });
      expect(Object.keys(document.components.schemas)).toContain(declared.body);
    }
  });
});
