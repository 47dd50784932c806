/**
 * JSON Schema of the RFC 9457 problem document that shared/http/problem.ts produces for every error.
 * Plain JSON Schema (2020-12), used by the OpenAPI document.
 */
export const Problem = {
  type: "object",
  description:
    "An RFC 9457 problem document (`application/problem+json`). Extension members carry details of " +
    "some errors (`requiredScope` of a 403, `entity` and `id` of a 404, the existing order of a 409 ...).",
  required: ["type", "title", "status", "detail"],
  properties: {
    type: { type: "string", format: "uri-reference", description: "Stable identifier of the kind of problem." },
    title: { type: "string", description: "Short summary of the kind of problem." },
    status: { type: "integer", minimum: 400, maximum: 599, description: "The HTTP status code." },
    detail: { type: "string", description: "What went wrong with this request." },
    instance: { type: "string", description: "The path of the request." },
    errors: {
      type: "array",
      description: "For invalid input (422): one entry per bad field.",
      items: {
        type: "object",
        required: ["path", "message"],
        properties: {
          path: {
            type: "string",
            description: "The field, as a path in the request body (`items[2].orderedQuantity`).",
            examples: ["items[2].orderedQuantity"],
          },
          message: { type: "string" },
        },
        additionalProperties: false,
      },
    },
    errorCount: {
      type: "integer",
      minimum: 51,
      description: "Present when there were more problems than the 50 `errors` lists: how many there were in all.",
    },
  },
  // Extension members are allowed (JSON Schema's default): not spelled out, so renderers show no placeholder member.
} as const;
