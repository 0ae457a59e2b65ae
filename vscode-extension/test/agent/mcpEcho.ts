/**
 * A minimal MCP server on stdio (newline-delimited JSON-RPC 2.0, as the MCP stdio transport specifies:
 * https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#stdio), written by hand so
 * the extension's tests need no MCP package. One tool, `echo(message)` → "Echo: <message>".
 */
import { createInterface } from "node:readline";

type Message = { jsonrpc: "2.0"; id?: number | string; method?: string; params?: Record<string, unknown> };

const send = (m: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...m })}\n`);

const tools = [
  {
    name: "echo",
    title: "Echo",
    description: "Echo a message back.",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
    annotations: { readOnlyHint: true },
  },
];

function answer(m: Message): unknown {
  switch (m.method) {
    case "initialize":
      return { protocolVersion: m.params?.protocolVersion ?? "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "echo-fixture", version: "1.0.0" } };
    case "ping":
      return {};
    case "tools/list":
      return { tools };
    case "tools/call": {
      const args = (m.params?.arguments ?? {}) as { message?: unknown };
      return { content: [{ type: "text", text: `Echo: ${String(args.message)}` }], isError: false };
    }
    default:
      throw Object.assign(new Error(`method not found: ${m.method}`), { code: -32601 });
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  const m = JSON.parse(line) as Message;
  if (m.id === undefined || m.method === undefined) return; // a notification, or a response to nothing we sent
  try {
    send({ id: m.id, result: answer(m) });
  } catch (err) {
    send({ id: m.id, error: { code: (err as { code?: number }).code ?? -32603, message: (err as Error).message } });
  }
});
