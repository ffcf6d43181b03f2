import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/gen/", "**/dist/", "node_modules/", ".data/", "scratch/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      "no-console": "error",
    },
  },
  {
    // Domain folders decide; transport lives in src/server, which translates to and from them.
    files: ["src/admin/**/*.ts", "src/launch/**/*.ts", "src/players/**/*.ts", "src/events/**/*.ts"],
    ignores: ["**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { group: ["**/server/**", "**/server"], message: "Domain code must not import src/server (transport)." },
            { group: ["@connectrpc/*"], message: "Domain code must not import Connect (transport)." },
          ],
        },
      ],
    },
  },
  {
    // A file a newcomer reads in one sitting: a longer one holds more than one job (docs/testing.md: layout checks).
    files: ["src/**/*.ts"],
    rules: { "max-lines": ["error", { max: 300 }] },
  },
  {
    // Tests read JSON answers field by field; typing every body would add noise, not safety.
    files: ["test/**/*.ts", "bench/**/*.ts", "**/*.test.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
);
