import type { ServiceSchema } from "moleculer";
// Placeholder until the orders service lands.
const ordersService: ServiceSchema = { name: "orders" };
export default ordersService;
