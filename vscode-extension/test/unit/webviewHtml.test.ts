import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { COMMANDS, CONTAINER_ID, RULES_VIEW_ID, VIEW_ID } from "../../src/ids";
import { newNonce, webviewHtml } from "../../src/views/webviewHtml";

describe("webview HTML", () => {
  const html = webviewHtml({ cspSource: "vscode-resource:", scriptUri: "s.js", styleUri: "s.css" }, "NONCE123");

  it("sets a default-src 'none' CSP with a nonce for the script", () => {
    expect(html).toContain("default-src 'none'");
    expect(html).toContain("script-src 'nonce-NONCE123'");
    expect(html).toContain('<script nonce="NONCE123" src="s.js">');
  });

  it("has no inline script", () => {
    expect(html).not.toMatch(/<script(?![^>]*src=)[^>]*>/);
  });

  it("makes a new nonce each time", () => {
    expect(newNonce()).not.toBe(newNonce());
  });
});

describe("identifiers", () => {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  it("the view and container ids match package.json", () => {
    expect(pkg.contributes.views[CONTAINER_ID][0].id).toBe(VIEW_ID);
    expect(pkg.contributes.views[CONTAINER_ID][1].id).toBe(RULES_VIEW_ID);
  });
  it("every command the code registers is contributed", () => {
    const contributed = pkg.contributes.commands.map((c: { command: string }) => c.command);
    for (const id of Object.values(COMMANDS)) expect(contributed).toContain(id);
  });
  it("pins every dependency exactly", () => {
    for (const deps of [pkg.dependencies, pkg.devDependencies]) for (const v of Object.values(deps)) expect(v).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
