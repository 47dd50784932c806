/**
 * Runs @seriousme/openapi-schema-validator on a document, in a child process (the library is
 * ESM-only; Jest runs tests as CommonJS).
 */
import { execFile } from "node:child_process";
import path from "node:path";

export interface OpenApiValidation {
  valid: boolean;
  /** The OpenAPI version the validator recognised ("3.1"). */
  version: string;
  errors: unknown[] | string;
}

export function validateOpenApiDocument(document: unknown): Promise<OpenApiValidation> {
  const script = path.join(__dirname, "validate-openapi.mjs");
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [script], { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`validate-openapi.mjs failed: ${stderr || err.message}`));
      else resolve(JSON.parse(stdout) as OpenApiValidation);
    });
    child.stdin?.end(JSON.stringify(document));
  });
}
