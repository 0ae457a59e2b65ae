/**
 * The Agent view's HTML: a strict CSP (`default-src 'none'`), the script and stylesheet from dist/ via
 * asWebviewUri, and a fresh nonce on every render. No inline script or style.
 */
import { randomBytes } from "node:crypto";

export interface HtmlAssets {
  cspSource: string;
  scriptUri: string;
  styleUri: string;
}

export function newNonce(): string {
  return randomBytes(18).toString("base64").replace(/[^A-Za-z0-9]/g, "");
}

export function webviewHtml(a: HtmlAssets, nonce: string = newNonce()): string {
  const csp = [
    "default-src 'none'",
    `style-src ${a.cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${a.cspSource} data:`,
    `font-src ${a.cspSource}`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${a.styleUri}" nonce="${nonce}">
<title>Agent</title>
</head>
<body>
<div id="app" role="main"></div>
<script nonce="${nonce}" src="${a.scriptUri}"></script>
</body>
</html>`;
}
