/**
 * The demo data set of the embedded quick start: a back office and a partner app, customers and
 * contacts, a small catalogue, and the partner's references. Created through the services'
 * own actions (runtime/demo/demo.ts), so it obeys every rule real data obeys.
 */
export const DEMO_CLIENTS = {
  backoffice: { name: "Demo back office", kind: "backoffice" },
  partner: { name: "Demo partner app", kind: "partner" },
} as const;

/** crm.upsertContact bodies: the customers are created with their first contact. */
export const DEMO_CONTACTS = [
  { firstName: "Ada", lastName: "Lovelace", email: "ada.lovelace@acme-retail.example", customerName: "Acme Retail" },
  { firstName: "Grace", lastName: "Hopper", email: "grace.hopper@acme-retail.example", customerName: "Acme Retail" },
  { firstName: "Alan", lastName: "Turing", email: "alan.turing@globex-foods.example", customerName: "Globex Foods" },
] as const;

const VAT_20 = { name: "VAT", rate: 20, vat: true };
const VAT_5_5 = { name: "VAT", rate: 5.5, vat: true };
const ECO_TAX = { name: "Eco-tax", rate: 0.5, vat: false };

export const DEMO_PRODUCTS = [
  { code: "WATER-SPARKLING", label: "Sparkling mineral water", taxes: [VAT_5_5, ECO_TAX] },
  { code: "OLIVE-OIL-EV", label: "Extra virgin olive oil", taxes: [VAT_5_5] },
  { code: "DISH-SOAP", label: "Dish soap, lemon", taxes: [VAT_20, ECO_TAX] },
] as const;
export type DemoProductCode = (typeof DEMO_PRODUCTS)[number]["code"];

export const DEMO_PACKAGINGS: {
  key: string;
  product: DemoProductCode;
  name: string;
  unit: string;
  unit_factor: number;
}[] = [
  { key: "water-1", product: "WATER-SPARKLING", name: "Bottle 1.5 L", unit: "bottle", unit_factor: 1 },
  { key: "water-6", product: "WATER-SPARKLING", name: "Pack of 6 x 1.5 L", unit: "bottle", unit_factor: 6 },
  { key: "oil-5", product: "OLIVE-OIL-EV", name: "Can 5 L", unit: "litre", unit_factor: 5 },
  { key: "soap-075", product: "DISH-SOAP", name: "Bottle 750 ml", unit: "litre", unit_factor: 0.75 },
];

/** The partner's own codes for packagings; the inactive one shows how `active: false` looks. */
export const DEMO_PACKAGING_REFERENCES = [
  { packaging: "water-6", externalReference: "PARTNER-WATER-6", active: true },
  { packaging: "oil-5", externalReference: "PARTNER-OIL-5", active: true },
  { packaging: "water-1", externalReference: "PARTNER-WATER-1", active: true },
  { packaging: "soap-075", externalReference: "PARTNER-SOAP-075", active: false },
] as const;

/** The partner's contact reference: the first demo contact, under the partner's own code. */
export const DEMO_CONTACT_REFERENCE = {
  contact: {
    externalReference: "PARTNER-CONTACT-1",
    firstName: "Ada",
    lastName: "Lovelace",
    email: "ada.lovelace@acme-retail.example",
  },
  customer: { name: "Acme Retail" },
} as const;

/** The references the printed sample orders use (both active). */
export const SAMPLE_PACKAGING_REFERENCES = ["PARTNER-WATER-6", "PARTNER-OIL-5"] as const;

export const DEMO_ADDRESS = {
  recipient: "Acme Retail, goods in",
  street: "12 Rue de la Paix",
  zipCode: "75002",
  city: "Paris",
  country: "FR",
} as const;
