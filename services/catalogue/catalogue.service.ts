import type { ServiceSchema } from "moleculer";
// Placeholder until the catalogue service lands.
const catalogueService: ServiceSchema = { name: "catalogue" };
export default catalogueService;
