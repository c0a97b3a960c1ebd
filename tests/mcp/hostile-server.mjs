// A hostile MCP server for the gateway's fault tests (crates/mcp/tests/it/sessions.rs, the
// `hostile` upstream of tests/mcp/sessions): built on the official TypeScript SDK, it
// misbehaves on purpose in the ways a real server can — it crashes in the middle of a call,
// never answers one, or floods the client with notifications before answering. Every loop
// and wait here is bounded.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "hostile", version: "1.0.0" }, { capabilities: { logging: {} } });

server.registerTool("crash", { description: "Exits in the middle of the call.", inputSchema: {} }, async () => {
  setTimeout(() => process.exit(3), 50);
  await new Promise((resolve) => setTimeout(resolve, 5000));
  return { content: [{ type: "text", text: "unreachable" }] };
});

server.registerTool("hang", { description: "Answers only after 60 s.", inputSchema: {} }, async () => {
  await new Promise((resolve) => setTimeout(resolve, 60000));
  return { content: [{ type: "text", text: "late" }] };
});

server.registerTool(
  "flood",
  { description: "Sends `count` log notifications, then answers.", inputSchema: { count: z.number().int().max(100000) } },
  async ({ count }) => {
    for (let i = 0; i < count; i++) {
      await server.server.sendLoggingMessage({ level: "info", data: `flood ${i}` });
    }
    return { content: [{ type: "text", text: `flooded ${count}` }] };
  },
);

server.registerTool("echo", { description: "Echoes.", inputSchema: { message: z.string() } }, async ({ message }) => ({
  content: [{ type: "text", text: `Echo: ${message}` }],
}));

await server.connect(new StdioServerTransport());
