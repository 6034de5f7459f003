// A remote MCP server built with the TypeScript SDK @modelcontextprotocol/sdk (McpServer,
// stateless streamable HTTP), for an openwop workflow to call: one tool, `add`, answering
// text and structuredContent.
// Usage: node mcp_server.mjs PORT
import express from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { recordHeaders } from './record.mjs';

const port = Number(process.argv[2]);

function server() {
  const s = new McpServer({ name: 'outbound-ts-tools', version: '1.0.0' });
  s.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
      structuredContent: { sum: a + b },
    }),
  );
  return s;
}

const app = express();
app.use(express.json());
app.use(recordHeaders('ts-mcp'));
// Stateless: a new server and transport per request, as the SDK's stateless example does.
app.post('/mcp', async (req, res) => {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  const s = server();
  res.on('close', () => { transport.close(); s.close(); });
  await s.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.listen(port, '127.0.0.1');
