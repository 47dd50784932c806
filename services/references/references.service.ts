import type { ServiceSchema } from "moleculer";
// Placeholder until the references service lands.
const referencesService: ServiceSchema = { name: "references" };
export default referencesService;
