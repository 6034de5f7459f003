// The MCP benchmark's baseline: the TypeScript SDK's own server (@modelcontextprotocol/sdk
// 1.32.2, streamable HTTP, JSON answers) with a trivial `echo` tool, in a process of its
// own so the kernel can count its CPU. Loopback only; exits by itself after MAX_SECONDS.
//
//   node sdk_echo_server.mjs PORT stateful|stateless [MAX_SECONDS]
//
// stateful: the SDK's session mode: `initialize` opens a session (one server and one
//   transport per session, Mcp-Session-Id), later requests are routed to it.
// stateless: the SDK's stateless example: a fresh server and transport per request.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const [portArg, mode = 'stateful', maxArg = '900'] = process.argv.slice(2);
const port = Number(portArg);

function echoServer() {
  const server = new McpServer({ name: 'sdk-echo', version: '1.0.0' });
  server.tool('echo', { hello: z.string().optional() }, async (args) => ({
    content: [{ type: 'text', text: JSON.stringify(args) }],
    structuredContent: args,
  }));
  return server;
}

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
}

const sessions = new Map();

async function stateful(req, res) {
  const body = req.method === 'POST' ? await readJson(req) : undefined;
  const id = req.headers['mcp-session-id'];
  let transport = id ? sessions.get(id) : undefined;
  if (!transport) {
    if (id || !isInitializeRequest(body)) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no valid session' }, id: null }));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sid) => sessions.set(sid, transport),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await echoServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

async function stateless(req, res) {
  const body = await readJson(req);
  const server = echoServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

const handle = mode === 'stateless' ? stateless : stateful;
const httpServer = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(e));
  });
});
httpServer.keepAliveTimeout = 60_000;
httpServer.listen(port, '127.0.0.1', () => console.log(`sdk echo (${mode}) listening on http://127.0.0.1:${port}/mcp`));
setTimeout(() => process.exit(0), Number(maxArg) * 1000).unref();
