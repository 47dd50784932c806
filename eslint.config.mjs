// ESLint (flat config): JavaScript's recommended rules and typescript-eslint's recommended
// type-checked rules over every .ts file of the tree, tests and benchmarks included. Type
// information comes from TypeScript 6's compiler API (the `typescript` package): `tsc` is
// TypeScript 7, which has none. Prettier owns the layout, so eslint-config-prettier comes last.
//
// Every rule turned off or relaxed below says why, for the files it names; nothing else is.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import prettier from "eslint-config-prettier";
import tseslint from "typescript-eslint";

/** The globals the plain JavaScript files use (ESLint's `globals` package is not a dependency). */
const nodeGlobals = { process: "readonly", Buffer: "readonly", console: "readonly", URL: "readonly" };
const browserGlobals = {
  document: "readonly",
  window: "readonly",
  location: "readonly",
  history: "readonly",
  navigator: "readonly",
  fetch: "readonly",
  URL: "readonly",
  URLSearchParams: "readonly",
  setTimeout: "readonly",
};

export default defineConfig(
  {
    // What builds and runs leave behind (as in .prettierignore).
    ignores: ["dist/", "coverage/", ".data/", "data/", "test/artifacts/", "bench/results/"],
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Relaxed: `const { dropped: _, ...rest } = value` names a key only to leave it out, as the
      // compiler's noUnusedLocals (npm run lint) already accepts.
      "@typescript-eslint/no-unused-vars": ["error", { ignoreRestSiblings: true }],
      // Relaxed: a caught error is `unknown` under strict; passing it on as a rejection
      // (shared/security/auth.ts) hands on what was thrown. Literals and plain objects are still refused.
      "@typescript-eslint/prefer-promise-reject-errors": ["error", { allowThrowingUnknown: true }],
    },
  },
  {
    files: ["shared/types.ts"],
    rules: {
      // Off: augmenting moleculer's ServiceSchema must repeat its type parameters by name, used or not.
      "@typescript-eslint/no-unused-vars": "off",
    },
  },
  {
    files: ["test/**/*.ts"],
    rules: {
      // Off in tests: @types/jest types the asymmetric matchers (`expect.any(Number)`,
      // `expect.objectContaining(...)`) as `any`, so each one put in an expected object, passed to
      // a matcher or returned by a helper is "unsafe" (some 60 of them). Reading a member of an
      // `any` (an unparsed body, a row) is still refused: no-unsafe-member-access and -call stay on.
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      // Off in tests: a fake of an async interface is written `async () => value`; `async` makes it
      // answer as the real one does (a throw becomes a rejection) though it awaits nothing.
      "@typescript-eslint/require-await": "off",
    },
  },
  {
    // The .mjs helpers run on Node; the portal's script runs in the browser. Plain JavaScript has no
    // type information: the untyped recommended rules only.
    files: ["**/*.js", "**/*.mjs"],
    extends: [tseslint.configs.disableTypeChecked],
  },
  { files: ["**/*.mjs"], languageOptions: { globals: nodeGlobals } },
  { files: ["gateway/portal/**/*.js"], languageOptions: { globals: browserGlobals } },
  prettier,
);
