import {
  ResolvedReferences,
  CONTACT_TTL_MS,
  type ContactReference,
  type CrmContact,
  type PackagingReference,
  type ReferencesAnswer,
} from "../../services/orders/orders.references-cache";
import type { PackagingSnapshot } from "../../services/orders/orders.snapshots";

const contactRef = (
  id: number,
  externalReference: string,
  contactId: number,
  lastName = "Hopper",
): ContactReference => ({
  id,
  externalReference,
  contact: { id: contactId, firstName: "Grace", lastName, email: "grace@navy.test" },
  customer: { id: 1, name: "Navy" },
});
const packagingRef = (id: number, externalReference: string): PackagingReference => ({
  id,
  externalReference,
  active: true,
  label: `P ${id}`,
  packaging: { id: 100 + id } as unknown as PackagingSnapshot,
});

const CONTACT = { by: "external", value: "C-1" } as const;
const ITEMS = [
  { by: "external", value: "P-1" },
  { by: "internal", value: "2" },
] as const;

/** A references stand-in that counts its calls and answers what it is told to. */
function referencesStandIn(answer: () => ReferencesAnswer) {
  const calls = { count: 0 };
  return {
    calls,
    fetch: async () => {
      calls.count += 1;
      return answer();
    },
  };
}

describe("the references an order resolved, kept by orders", () => {
  let answer: ReferencesAnswer;
  let cache: ResolvedReferences;
  let references: ReturnType<typeof referencesStandIn>;
  const resolve = (
    clientId = 7,
    contact: { by: "external" | "internal"; value: string } = CONTACT,
    items: readonly { by: "external" | "internal"; value: string }[] = ITEMS,
  ) => cache.resolve(clientId, [contact], [...items], references.fetch);

  beforeEach(() => {
    answer = { contacts: [contactRef(1, "C-1", 10)], packagings: [packagingRef(1, "P-1"), packagingRef(2, "P-2")] };
    cache = new ResolvedReferences();
    references = referencesStandIn(() => answer);
  });

  afterEach(() => jest.useRealTimers());

  it("when an order names the same references again, then references is not asked again and the answer is the same", async () => {
    const first = await resolve();
    const second = await resolve();
    expect(references.calls.count).toBe(1);
    expect(second).toEqual(first);
  });

  it("when another client names the same codes, then it is asked for its own: clients never share answers", async () => {
    await resolve(7);
    await resolve(8);
    expect(references.calls.count).toBe(2);
  });

  it("when any reference of the order is not kept yet, then references is asked for the whole order", async () => {
    await resolve();
    await resolve(7, CONTACT, [...ITEMS, { by: "external", value: "P-3" }]);
    expect(references.calls.count).toBe(2);
  });

  it("when a reference was unknown, then it is asked again next time (it may have been created meanwhile)", async () => {
    answer = { contacts: [null], packagings: [null, null] };
    await resolve();
    answer = { contacts: [contactRef(1, "C-1", 10)], packagings: [packagingRef(1, "P-1"), packagingRef(2, "P-2")] };
    expect((await resolve()).contacts[0]?.id).toBe(1);
    expect(references.calls.count).toBe(2);
  });

  it("when a code matched only as a record id, then it is not kept (a reference with that code would win later)", async () => {
    answer = { contacts: [contactRef(5, "C-5", 10)], packagings: [] };
    await resolve(7, { by: "external", value: "5" }, []);
    await resolve(7, { by: "external", value: "5" }, []);
    expect(references.calls.count).toBe(2);
  });

  it("when crm broadcasts that the contact changed, then the next order asks references again", async () => {
    await resolve();
    cache.forgetContacts([10]);
    answer = { ...answer, contacts: [contactRef(1, "C-1", 10, "Murray Hopper")] };
    expect((await resolve()).contacts[0]?.contact.lastName).toBe("Murray Hopper");
    expect(references.calls.count).toBe(2);
  });

  it("when references broadcasts that the contact reference was re-pointed, then the next order sees its new contact", async () => {
    await resolve();
    cache.forgetContactReferences([1]);
    answer = { ...answer, contacts: [contactRef(1, "C-1", 11)] };
    expect((await resolve()).contacts[0]?.contact.id).toBe(11);
  });

  it("when another contact or reference changes, then what is kept for this one stays", async () => {
    await resolve();
    cache.forgetContacts([99]);
    cache.forgetContactReferences([98]);
    await resolve();
    expect(references.calls.count).toBe(1);
  });

  it("when a change is broadcast while references is being asked, then that answer is used but not kept", async () => {
    let release: () => void = () => undefined;
    const slow = cache.resolve(
      7,
      [CONTACT],
      [...ITEMS],
      () =>
        new Promise<ReferencesAnswer>((resolve) => {
          release = () => resolve(answer);
        }),
    );
    cache.forgetContactReferences([1]);
    release();
    await slow;
    await resolve();
    expect(references.calls.count).toBe(1);
  });

  it("when a broadcast was lost, then a kept contact is asked again once its time is up", async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    await resolve();
    jest.setSystemTime(1_000_000 + CONTACT_TTL_MS + 1);
    await resolve();
    expect(references.calls.count).toBe(2);
  });
});

describe("the CRM contacts and catalogue packagings an order named by id, kept by orders", () => {
  const ada = (lastName = "Lovelace"): CrmContact => ({
    id: 3,
    firstName: "Ada",
    lastName,
    email: "ada@acme.test",
    customer: { id: 1, name: "Acme" },
  });
  const packaging = (id: number) => ({ id }) as unknown as PackagingSnapshot;

  it("when the same contact is named again, then crm is asked once, and again once crm broadcasts that it changed", async () => {
    const cache = new ResolvedReferences();
    let current = ada();
    let calls = 0;
    const fetch = async () => {
      calls += 1;
      return [current];
    };
    await cache.crmContactsById([3], fetch);
    expect((await cache.crmContactsById([3], fetch)).get(3)).toEqual(ada());
    current = ada("King");
    cache.forgetContacts([3]);
    expect((await cache.crmContactsById([3], fetch)).get(3)?.lastName).toBe("King");
    expect(calls).toBe(2);
  });

  it("when a contact is unknown, then it is asked again next time", async () => {
    const cache = new ResolvedReferences();
    let calls = 0;
    const fetch = async () => {
      calls += 1;
      return [];
    };
    expect((await cache.crmContactsById([3], fetch)).get(3)).toBeUndefined();
    await cache.crmContactsById([3], fetch);
    expect(calls).toBe(2);
  });

  it("when some packagings are kept, then catalogue is asked for the missing ones only", async () => {
    const cache = new ResolvedReferences();
    const asked: number[][] = [];
    const fetch = async (missing: number[]) => {
      asked.push(missing);
      return missing.filter((id) => id !== 9).map(packaging);
    };
    await cache.cataloguePackagingsById([1, 2], fetch);
    const found = await cache.cataloguePackagingsById([2, 3, 9], fetch);
    expect(found.map((p) => p.id).sort()).toEqual([2, 3]);
    expect(asked).toEqual([
      [1, 2],
      [3, 9],
    ]);
  });
});
