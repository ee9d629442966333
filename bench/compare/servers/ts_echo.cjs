// The official TypeScript SDK's server answering one `echo` tool, for the servers side by
// side (`toolwire-compare servers`), written as the SDK's documentation shows (McpServer,
// registerTool with a zod schema). CommonJS, so that NODE_PATH finds the SDK installed by
// tests/peers/install.sh (@modelcontextprotocol/sdk 1.32.2, zod 4).
//
//   node ts_echo.cjs stdio
//   node ts_echo.cjs http-stateless PORT   # a new server and transport per request (the SDK's stateless pattern)
//   node ts_echo.cjs http-sessions PORT    # one transport per session, found by Mcp-Session-Id
//
// HTTP is node's own http module (no express) on 127.0.0.1; answers are plain JSON
// (enableJsonResponse), as toolwire's and rmcp's stateless servers give.
"use strict";
const http = require("http");
const { randomUUID } = require("crypto");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const { StreamableHTTPServerTransport } = require("@modelcontextprotocol/sdk/server/streamableHttp.js");
const { isInitializeRequest } = require("@modelcontextprotocol/sdk/types.js");
const { z } = require("zod");

function build() {
  const server = new McpServer({ name: "ts-echo", version: "0" });
  server.registerTool(
    "echo",
    { description: "Returns the message it is given.", inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: "text", text: message }] }),
  );
  return server;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      try {
        resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined);
      } catch (error) {
        reject(error);
      }
    });
    req.on("error", reject);
  });
}

async function main() {
  const [mode, port] = process.argv.slice(2);
  if (mode === "stdio") {
    await build().connect(new StdioServerTransport());
    return;
  }
  const sessions = new Map();
  const handler = async (req, res) => {
    const body = req.method === "POST" ? await readBody(req) : undefined;
    if (mode === "http-stateless") {
      const server = build();
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      res.on("close", () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    const id = req.headers["mcp-session-id"];
    let transport = id && sessions.get(id);
    if (!transport) {
      if (id || !isInitializeRequest(body)) {
        res.writeHead(400).end("no session");
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      await build().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  };
  http
    .createServer((req, res) => {
      handler(req, res).catch((error) => {
        console.error(error);
        if (!res.headersSent) res.writeHead(500).end();
      });
    })
    .listen(Number(port), "127.0.0.1");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
