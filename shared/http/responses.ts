/**
 * What an action says about its HTTP answer, through the meta moleculer-web reads.
 */
import type { Context } from "moleculer";
import type { RequestMeta } from "../security/auth";

export const API_PREFIX = "/api/v1";

/** The path of one resource, as used in Location headers (`/api/v1/orders/42`). */
export function resourcePath(collection: string, id: number): string {
  return `${API_PREFIX}/${collection}/${id}`;
}

/** Answer 201 Created with the new resource's Location. */
export function respondCreated(ctx: Context<unknown, RequestMeta>, collection: string, id: number): void {
  ctx.meta.$statusCode = 201;
  ctx.meta.$location = resourcePath(collection, id);
}
