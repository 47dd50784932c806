import type { ServiceSchema } from "moleculer";
// Placeholder until the webhooks service lands.
const webhooksService: ServiceSchema = { name: "webhooks" };
export default webhooksService;
