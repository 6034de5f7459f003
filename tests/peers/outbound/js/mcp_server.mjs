// A remote MCP server built with the TypeScript SDK @modelcontextprotocol/sdk (McpServer,
// streamable HTTP with sessions), for an openwop workflow to call: one tool, `add`, answering
// text and structuredContent, after a log notification on the same event stream; and
// `confirm`, which asks the client with an elicitation request mid-call.
// Usage: node mcp_server.mjs PORT
import express from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import { recordHeaders } from './record.mjs';

const port = Number(process.argv[2]);

function server() {
  const s = new McpServer({ name: 'outbound-ts-tools', version: '1.0.0' }, { capabilities: { logging: {} } });
  s.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }, extra) => {
      // A log notification on the request's event stream before the result, as a
      // chatty server sends: the client must pass over it to the response.
      await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: `adding ${a} and ${b}` } });
      return { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } };
    },
  );
  s.registerTool(
    'confirm',
    { description: 'Asks the user to confirm (an elicitation request, the 2025-11-25 way)', inputSchema: {} },
    async () => {
      const answer = await s.server.elicitInput({
        message: 'Really?',
        requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
      });
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
    },
  );
  return s;
}

const app = express();
app.use(express.json());
// The driver's own question (before the recorder: not a request from the host).
app.get('/sessions', (_req, res) => res.json({ opened, open: sessions.size }));
app.use(recordHeaders('ts-mcp'));
// Sessions, as the SDK's stateful example keeps them: `initialize` opens one (its id in
// Mcp-Session-Id), later requests name it, DELETE closes it. Open sessions are counted
// at GET /sessions so the driver can check the host closed each one it opened.
const sessions = new Map();
let opened = 0;
app.post('/mcp', async (req, res) => {
  const id = req.headers['mcp-session-id'];
  if (id && sessions.has(id)) {
    await sessions.get(id).handleRequest(req, res, req.body);
    return;
  }
  if (id || !isInitializeRequest(req.body)) {
    res.status(400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null });
    return;
  }
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sid) => { sessions.set(sid, transport); opened += 1; },
  });
  transport.onclose = () => { if (transport.sessionId) sessions.delete(transport.sessionId); };
  await server().connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.delete('/mcp', async (req, res) => {
  const transport = sessions.get(req.headers['mcp-session-id']);
  if (!transport) { res.status(404).end(); return; }
  await transport.handleRequest(req, res);
});
app.listen(port, '127.0.0.1');
