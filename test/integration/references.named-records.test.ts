/**
 * A packaging reference names a client and a packaging: both must exist and be nameable (an
 * active partner; a catalogue packaging), checked through the owning services' actions.
 */
import fc from "fast-check";
import { principal, startTestBroker, type TestBroker } from "../helpers/broker";

let t: TestBroker;
let packagingId: number;
const partner = principal("partner", ["partner"]);
const backoffice = principal("backoffice", ["crm", "catalogue"]);

beforeAll(async () => {
  t = await startTestBroker({ services: ["catalogue", "references"] });
  const product = await t.call<{ id: number }>("catalogue.createProduct", { code: "P-NAMED", label: "Water" });
  packagingId = (
    await t.call<{ id: number }>("catalogue.createPackaging", {
      productId: product.id,
      name: "Bottle",
      unit: "L",
      unit_factor: 1,
    })
  ).id;
});
afterAll(() => t.stop());

const create = (clientId: number, pid = packagingId, externalReference = "X") =>
  t.call("references.createPackagingReference", { clientId, externalReference, packagingId: pid });

const paths = async (p: Promise<unknown>) => {
  const err = (await p.then(
    () => null,
    (e: unknown) => e,
  )) as { code?: number; data?: { errors?: { path: string }[] } } | null;
  return { code: err?.code, paths: (err?.data?.errors ?? []).map((e) => e.path) };
};

describe("when an admin creates a packaging reference", () => {
  it("then a client id that names no client is 422 naming clientId, for any such id", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1_000_000, max: 2_147_483_647 }), async (clientId) => {
        expect(await paths(create(clientId))).toEqual({ code: 422, paths: ["clientId"] });
      }),
      { numRuns: 15 },
    );
  });

  it("then a back-office (non-partner) client is 422 naming clientId, and an unknown packaging too, both at once", async () => {
    expect(await paths(create(backoffice.clientId))).toEqual({ code: 422, paths: ["clientId"] });
    expect(await paths(create(backoffice.clientId, 2_000_000_000))).toEqual({
      code: 422,
      paths: ["clientId", "packagingId"],
    });
  });

  it("then a partner client and a real packaging are 201-created", async () => {
    await expect(create(partner.clientId, packagingId, "OK-1")).resolves.toMatchObject({ externalReference: "OK-1" });
  });
});
