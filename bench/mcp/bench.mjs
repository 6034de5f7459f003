// tools/call round trips per second: our host's MCP mount beside the TypeScript SDK's own
// server (@modelcontextprotocol/sdk 1.32.2, stateless streamable HTTP, in this process)
// with an equivalent trivial tool, in one run. Prints both rates and the ratio.
// Usage: node bench.mjs OURS_MCP_URL API_KEY [requests] [concurrency]
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const [ours, key, requestsArg, concurrencyArg] = process.argv.slice(2);
const requests = Number(requestsArg ?? 400);
const concurrency = Number(concurrencyArg ?? 4);

// The SDK side: a fresh server per request, as the SDK's stateless example does.
function sdkServer() {
  const server = new McpServer({ name: 'sdk-echo', version: '1.0.0' });
  server.tool('echo', { hello: z.string().optional() }, async (args) => ({
    content: [{ type: 'text', text: JSON.stringify(args) }],
    structuredContent: args,
  }));
  return server;
}
const httpServer = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = JSON.parse(Buffer.concat(chunks).toString());
  const server = sdkServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
});
await new Promise((r) => httpServer.listen(0, '127.0.0.1', r));
const sdkUrl = `http://127.0.0.1:${httpServer.address().port}/mcp`;

async function once(url, headers, body) {
  const resp = await fetch(url, { method: 'POST', headers, body });
  const text = await resp.text();
  if (!resp.ok || !text.includes('"result"') || text.includes('"isError":true')) {
    throw new Error(`bad answer from ${url}: ${resp.status} ${text.slice(0, 300)}`);
  }
}

async function rate(url, headers, makeBody) {
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < requests) {
      const i = next++;
      await once(url, headers, makeBody(i));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return requests / ((performance.now() - started) / 1000);
}

const common = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const oursHeaders = {
  ...common,
  authorization: `Bearer ${key}`,
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'echo',
};
const oursBody = (i) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: {
      name: 'echo',
      arguments: { hello: `n${i}` },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  });
const sdkHeaders = { ...common, 'mcp-protocol-version': '2025-11-25' };
const sdkBody = (i) =>
  JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { hello: `n${i}` } } });

// Warm both up, then measure one after the other in the same run.
await once(ours, oursHeaders, oursBody(0));
await once(sdkUrl, sdkHeaders, sdkBody(0));
const oursRps = await rate(ours, oursHeaders, oursBody);
const sdkRps = await rate(sdkUrl, sdkHeaders, sdkBody);
console.log(`openwop_rps ${oursRps.toFixed(1)}   ts_sdk_rps ${sdkRps.toFixed(1)}   ratio ${(oursRps / sdkRps).toFixed(2)}`);
httpServer.close();
