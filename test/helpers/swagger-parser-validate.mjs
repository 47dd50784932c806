// Validates an OpenAPI document (its path as the argument) with @apidevtools/swagger-parser and
// prints { valid, message } as JSON. A separate process because the library loads ESM-only
// dependencies, which Jest's CommonJS runtime cannot.
import SwaggerParser from "@apidevtools/swagger-parser";

try {
  await SwaggerParser.validate(process.argv[2]);
  process.stdout.write(JSON.stringify({ valid: true, message: "" }));
} catch (err) {
  process.stdout.write(JSON.stringify({ valid: false, message: err.message }));
}
