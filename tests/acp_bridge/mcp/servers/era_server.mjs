// A server of the 2026-07-28 era on the current TypeScript SDK (`@modelcontextprotocol/server`): one
// `echo` tool, served over HTTP by `createMcpHandler` on 127.0.0.1 (a free port, printed first on stdout
// as `PORT <n>` once listening), `legacy: 'reject'` (modern only: a 2025 `initialize` is refused) or
// `'stateless'` (the SDK's default 2025 fallback), or over stdio. Plain `node:http` mounted on the
// handler's web-standard `fetch`.
//
//   node era_server.mjs http-reject | http-stateless | stdio
//
// The tests copy it next to the npm package (node resolves imports from the script's own folder).
import http from "node:http";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";

const [mode] = process.argv.slice(2);

function factory() {
  const server = new McpServer({ name: "era", version: "2.4.0" }, { instructions: "The era server echoes." });
  server.registerTool(
    "echo",
    { description: "Echo the text back", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text: `era: ${text}` }] }),
  );
  return server;
}

if (mode === "stdio") {
  const { StdioServerTransport } = await import("@modelcontextprotocol/server/stdio");
  await factory().connect(new StdioServerTransport());
} else {
  const handler = createMcpHandler(factory, { legacy: mode === "http-reject" ? "reject" : "stateless" });
  const server = http.createServer(async (req, res) => {
    try {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        for (const one of Array.isArray(value) ? value : [value]) if (one !== undefined) headers.append(name, one);
      }
      const hasBody = req.method !== "GET" && req.method !== "HEAD";
      const request = new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers,
        body: hasBody ? Buffer.concat(chunks) : undefined,
      });
      const response = await handler.fetch(request);
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (response.body) for await (const chunk of response.body) res.write(chunk);
      res.end();
    } catch (error) {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
    }
  });
  server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
  const stop = () => server.close(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
