// Validates an OpenAPI document (JSON on stdin) with @seriousme/openapi-schema-validator and
// prints { valid, version, errors } as JSON. A separate process because the library is ESM-only
// and Jest's CommonJS runtime cannot load it.
import { Validator } from "@seriousme/openapi-schema-validator";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const validator = new Validator({ allErrors: true });
const result = await validator.validate(JSON.parse(Buffer.concat(chunks).toString("utf8")));
process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors ?? [] }));
