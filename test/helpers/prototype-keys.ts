/** Whether a JSON value holds, at any depth, a key the gateway refuses as a prototype name. */
import { isForbiddenKey } from "../../shared/http/json-body";

export function hasPrototypeKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasPrototypeKey);
  if (typeof value !== "object" || value === null) return false;
  return Object.keys(value).some((k) => isForbiddenKey(k) || hasPrototypeKey((value as Record<string, unknown>)[k]));
}
