/**
 * Type augmentations for libraries whose typings miss what we use.
 */
import type { Scope } from "./auth";

declare module "moleculer" {
  interface ActionSchema {
    /** The scope a client needs to call this action through the API (see shared/auth.ts). */
    scope?: Scope;
    /** Human summary, used by the OpenAPI document. */
    summary?: string;
  }
}

export {};
