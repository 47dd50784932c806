/**
 * How an order names its contact and each packaging (docs/api.md, `POST /api/v1/orders`:
 * exactly one mode each).
 * Pure functions: they read the payload, pick the mode, and report every problem at once
 * with the path of the field, before anything is looked up or written.
 */
import { hasScope, type Principal, type Scope } from "../../shared/security/auth";
import { ForbiddenError, InvalidInputError, type FieldError } from "../../shared/errors";
import type { ContactInput, CreateOrderParams, ItemInput } from "./orders.params";

export type ReferenceBy = "internal" | "external";

export interface ReferenceLookup {
  by: ReferenceBy;
  value: string;
  /** The payload field that named it, for errors (`contact.externalReferenceId`). */
  path: string;
}

export type ContactMode =
  | { kind: "crm"; id: number }
  | { kind: "reference"; ref: ReferenceLookup }
  | {
      kind: "inline";
      contact: { externalReference: string; firstName: string; lastName: string; email: string };
      customer: { name: string };
    };

export type ItemMode = { kind: "catalogue"; packagingId: number } | { kind: "reference"; ref: ReferenceLookup };

const INLINE_FIELDS = ["firstName", "lastName", "email"] as const;

function referenceOf(
  input: { externalReferenceId?: string; internalReferenceId?: string },
  base: string,
): ReferenceLookup | null {
  if (input.externalReferenceId !== undefined)
    return { by: "external", value: input.externalReferenceId, path: `${base}.externalReferenceId` };
  if (input.internalReferenceId !== undefined)
    return { by: "internal", value: input.internalReferenceId, path: `${base}.internalReferenceId` };
  return null;
}

function contactModesUsed(c: ContactInput): string[] {
  const used: string[] = [];
  if (c.id !== undefined) used.push("id");
  if (c.externalReferenceId !== undefined) used.push("externalReferenceId");
  if (c.internalReferenceId !== undefined) used.push("internalReferenceId");
  if (c.externalReference !== undefined) used.push("externalReference");
  return used;
}

function inlineMode(c: ContactInput, customer: CreateOrderParams["customer"]): ContactMode {
  const errors: FieldError[] = [];
  for (const f of INLINE_FIELDS)
    if (c[f] === undefined)
      errors.push({
        path: `contact.${f}`,
        message: "Required when the contact is sent with the order (contact.externalReference).",
      });
  if (!customer)
    errors.push({
      path: "customer.name",
      message: "Required when the contact is sent with the order (contact.externalReference).",
    });
  if (errors.length > 0) throw new InvalidInputError(errors);
  return {
    kind: "inline",
    contact: {
      externalReference: c.externalReference!,
      firstName: c.firstName!,
      lastName: c.lastName!,
      email: c.email!,
    },
    customer: customer!,
  };
}

export function contactModeOf(order: Pick<CreateOrderParams, "contact" | "customer">): ContactMode {
  const c = order.contact;
  const used = contactModesUsed(c);
  if (used.length === 0) {
    throw InvalidInputError.field(
      "contact",
      "Identify the contact by exactly one of: id, externalReferenceId, internalReferenceId, or externalReference with firstName, lastName, email and customer.name.",
    );
  }
  if (used.length > 1) {
    throw InvalidInputError.field("contact", `Use exactly one way to identify the contact; got ${used.join(" and ")}.`);
  }
  if (used[0] === "externalReference") return inlineMode(c, order.customer);

  const stray = INLINE_FIELDS.filter((f) => c[f] !== undefined);
  if (stray.length > 0) {
    throw new InvalidInputError(
      stray.map((f) => ({
        path: `contact.${f}`,
        message: "Only allowed with contact.externalReference (contact data sent with the order).",
      })),
    );
  }
  if (c.id !== undefined) return { kind: "crm", id: c.id };
  return { kind: "reference", ref: referenceOf(c, "contact")! };
}

function itemMode(item: ItemInput, index: number, errors: FieldError[]): ItemMode | null {
  const base = `items[${index}]`;
  const used = [item.packaging, item.externalReferenceId, item.internalReferenceId].filter(
    (v) => v !== undefined,
  ).length;
  if (used !== 1) {
    errors.push({
      path: base,
      message:
        used === 0
          ? "Identify the packaging by exactly one of: packaging, externalReferenceId, internalReferenceId."
          : "Use exactly one of packaging, externalReferenceId, internalReferenceId.",
    });
    return null;
  }
  if (item.packaging !== undefined) return { kind: "catalogue", packagingId: item.packaging };
  return { kind: "reference", ref: referenceOf(item, base)! };
}

export function itemModesOf(items: ItemInput[]): ItemMode[] {
  const errors: FieldError[] = [];
  const modes = items.map((item, i) => itemMode(item, i, errors));
  if (errors.length > 0) throw new InvalidInputError(errors);
  return modes as ItemMode[];
}

/** The scopes an order's identification modes need, each with the first field that needs it. */
export function scopesNeeded(contact: ContactMode, items: ItemMode[]): Map<Scope, string> {
  const needed = new Map<Scope, string>();
  if (contact.kind === "crm") needed.set("crm", "contact.id");
  else needed.set("partner", contact.kind === "reference" ? contact.ref.path : "contact.externalReference");
  items.forEach((m, i) => {
    const scope: Scope = m.kind === "catalogue" ? "catalogue" : "partner";
    if (!needed.has(scope)) needed.set(scope, m.kind === "catalogue" ? `items[${i}].packaging` : m.ref.path);
  });
  return needed;
}

/** Refuses (403) an order whose modes need a scope the client lacks, naming the first field that needs it. */
export function checkScopes(client: Principal, contact: ContactMode, items: ItemMode[]): void {
  for (const [scope, path] of scopesNeeded(contact, items)) {
    if (!hasScope(client, scope)) {
      throw new ForbiddenError(`\`${path}\` needs the \`${scope}\` scope, which this API key lacks.`, {
        requiredScope: scope,
        path,
      });
    }
  }
}
