// Lint: typescript-eslint recommended, plus the boundaries of the three roots (STYLE rule 11):
// only src/ may import `vscode` (src/acp/ and the few host modules the integration tests load do not);
// webview/ and shared/ never do, and shared/ imports no Node modules.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const noVscode = { name: "vscode", message: "Only src/ (the extension host) may import vscode." };

export default tseslint.config(
  { ignores: ["dist/**", "out/**", "node_modules/**", "artifacts/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  { files: ["webview/**/*.ts"], rules: { "no-restricted-imports": ["error", { paths: [noVscode], patterns: ["node:*", "../src/*"] }] } },
  { files: ["shared/**/*.ts"], rules: { "no-restricted-imports": ["error", { paths: [noVscode], patterns: ["node:*", "../src/*", "../webview/*"] }] } },
  { files: ["src/acp/**/*.ts"], rules: { "no-restricted-imports": ["error", { paths: [{ ...noVscode, message: "src/acp/ runs in plain Node (integration tests): no vscode." }] }] } },
  // The host modules outside src/acp/ that the integration tests and e2e drivers load in plain Node.
  {
    files: ["src/session/store.ts", "src/session/mcpConfig.ts", "src/review/permissions.ts", "src/review/questions.ts", "src/views/webviewHtml.ts"],
    rules: { "no-restricted-imports": ["error", { paths: [{ ...noVscode, message: "Loaded in plain Node by the integration or e2e tests: no vscode." }] }] },
  },
  { files: ["scripts/**/*.mjs", "test/e2e/**/*.mjs"], languageOptions: { globals: { process: "readonly", console: "readonly", URL: "readonly", setTimeout: "readonly" } } },
);
