// Drives the openwop MCP mount with the pinned TypeScript clients:
//  - @modelcontextprotocol/client 2.4.0 (2026-07-28, version negotiation `auto`): list + call,
//    then the tasks extension on the wire (create -> get -> cancel) with that client's framing;
//  - @modelcontextprotocol/ext-tasks 0.2.2 on that client: a task-backed call settled
//    through the package's requester session (its 2026 path needs a raw dispatcher, which
//    posts the package's own frames with the SEP-2243 headers mirrored from the body);
//  - @modelcontextprotocol/sdk 1.32.2 (2025-11-25 initialize era only): list + call, and an
//    approval and a clarification run answered through its elicitation/create handler;
//  - @modelcontextprotocol/client 2.4.0 with an elicitation handler: the same two runs as
//    2026-07-28 InputRequiredResult rounds.
// Env: OPENWOP_MCP_URL, OPENWOP_API_KEY. Exits non-zero on the first broken expectation.
import assert from 'node:assert/strict';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';

const url = new URL(process.env.OPENWOP_MCP_URL);
const key = process.env.OPENWOP_API_KEY;
const requestInit = { headers: { Authorization: `Bearer ${key}` } };
const ok = (what) => console.log(`ok: ${what}`);

// A user who approves and answers every question.
function answerEveryQuestion(params) {
  const props = params.requestedSchema?.properties ?? {};
  if ('decision' in props) return { action: 'accept', content: { decision: 'accept' } };
  return { action: 'accept', content: Object.fromEntries(Object.keys(props).map((k) => [k, `answer to ${k}`])) };
}

async function humanInTheLoop(client, label) {
  const approved = await client.callTool({ name: 'approval', arguments: {} });
  assert.equal(approved.isError ?? false, false, JSON.stringify(approved));
  assert.equal(approved.structuredContent.decision.action, 'accept');
  ok(`${label}: an approval run answered through the elicitation handler`);
  const clarified = await client.callTool({ name: 'clarify', arguments: {} });
  assert.equal(clarified.isError ?? false, false, JSON.stringify(clarified));
  assert.equal(clarified.structuredContent.answer.q1, 'answer to q1');
  ok(`${label}: a clarification run answered through the elicitation handler`);
}

async function exercise(client, label) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.deepEqual(names, [...names].sort(), `${label}: sorted`);
  assert.ok(names.includes('echo'), `${label}: echo listed`);
  ok(`${label}: tools/list (${names.length} tools, sorted)`);
  const result = await client.callTool({ name: 'echo', arguments: { from: label } });
  assert.equal(result.isError ?? false, false);
  assert.equal(JSON.parse(result.content[0].text).from, label);
  ok(`${label}: tools/call echo`);
  const failed = await client.callTool({ name: 'fail', arguments: {} });
  assert.equal(failed.isError, true);
  ok(`${label}: failed run is isError`);
}

// 2026-07-28 through the v2 client.
const v2 = new ClientV2({ name: 'openwop-peer', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
await v2.connect(new HttpV2(url, { requestInit }));
await exercise(v2, 'ts-v2');
await v2.close();

// The tasks extension, framed as a 2026 client frames it (headers mirror the body).
const TASKS = 'io.modelcontextprotocol/tasks';
let nextId = 1;
async function rpc(method, params, name) {
  const headers = {
    ...requestInit.headers,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
  };
  if (name) headers['mcp-name'] = name;
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
  };
  const resp = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: meta } }),
  });
  const text = await resp.text();
  const data = text.split('\n').find((l) => l.startsWith('data:'));
  return JSON.parse(data ? data.slice(5) : text);
}
const created = await rpc('tools/call', { name: 'slow', arguments: { ms: 60000 } }, 'slow');
assert.equal(created.result.resultType, 'task', JSON.stringify(created));
assert.equal(created.result.status, 'working');
const taskId = created.result.taskId;
ok('tasks: tools/call answered CreateTaskResult');
const got = await rpc('tasks/get', { taskId }, taskId);
assert.equal(got.result.status, 'working');
ok('tasks: tasks/get');
const cancelled = await rpc('tasks/cancel', { taskId }, taskId);
assert.equal(cancelled.result.resultType, 'complete', JSON.stringify(cancelled));
assert.equal(cancelled.result.status, undefined, 'tasks/cancel answers an empty ack');
const after = await rpc('tasks/get', { taskId }, taskId);
assert.equal(after.result.status, 'cancelled');
ok('tasks: tasks/cancel');

// The same calls through @modelcontextprotocol/ext-tasks: the package frames every request
// itself; the raw dispatcher (the package's "host-owned request coordinator") adds the
// JSON-RPC envelope (the package hands over `method` and `params` only) and transport
// headers (auth, and the SEP-2243 mirrors).
const extClient = new ClientV2({ name: 'openwop-ext-tasks', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
await extClient.connect(new HttpV2(url, { requestInit }));
async function rawDispatch(request) {
  const headers = {
    ...requestInit.headers,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': request.method,
  };
  const name = request.params?.name ?? request.params?.taskId;
  if (typeof name === 'string') headers['mcp-name'] = name;
  const framed = { jsonrpc: '2.0', id: nextId++, ...request };
  const resp = await fetch(url, { method: 'POST', headers, body: JSON.stringify(framed) });
  const text = await resp.text();
  if (process.env.DEBUG_EXT) console.error('>>', JSON.stringify(framed), '\n<<', resp.status, text);
  const data = text.split('\n').find((l) => l.startsWith('data:'));
  return JSON.parse(data ? data.slice(5) : text);
}
const session = createTaskSessionFromClient(extClient, {
  endpointId: 'openwop-peer',
  rawDispatch,
  v2RequestFraming: {
    protocolVersion: '2026-07-28',
    clientInfo: { name: 'openwop-ext-tasks', version: '1.0.0' },
    clientCapabilities: {},
  },
});
try {
  const slow = await session.callTool('slow', { ms: 1500 });
  const settled = await slow.settle();
  const slowResult = resultFromTaskOutcome(settled.outcome);
  assert.equal(slowResult.isError ?? false, false, JSON.stringify(settled));
  ok('ext-tasks: a task-backed slow call settles completed');
  const failing = await session.callTool('fail', {});
  const failed = resultFromTaskOutcome((await failing.settle()).outcome);
  assert.equal(failed.isError, true, JSON.stringify(failed));
  ok('ext-tasks: a failed run settles as isError');
} finally {
  await session.close();
  await extClient.close();
}

// 2025-11-25 through the v1 SDK (initialize + Mcp-Session-Id).
const v1 = new ClientV1({ name: 'openwop-peer-legacy', version: '1.0.0' });
await v1.connect(new HttpV1(url, { requestInit }));
await exercise(v1, 'ts-v1-legacy');
await v1.close();

const v1Hitl = new ClientV1({ name: 'openwop-peer-legacy', version: '1.0.0' }, { capabilities: { elicitation: {} } });
let v1Asked = 0;
v1Hitl.setRequestHandler(ElicitRequestSchema, async (request) => {
  v1Asked += 1;
  return answerEveryQuestion(request.params);
});
await v1Hitl.connect(new HttpV1(url, { requestInit }));
await humanInTheLoop(v1Hitl, 'ts-v1-legacy (2025-11-25)');
assert.equal(v1Asked, 2, 'asked once per run');
await v1Hitl.close();

const v2Hitl = new ClientV2(
  { name: 'openwop-peer', version: '1.0.0' },
  { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: { form: {} } } },
);
let v2Asked = 0;
v2Hitl.setRequestHandler('elicitation/create', async (request) => {
  v2Asked += 1;
  return answerEveryQuestion(request.params);
});
await v2Hitl.connect(new HttpV2(url, { requestInit }));
await humanInTheLoop(v2Hitl, 'ts-v2 (2026-07-28)');
assert.equal(v2Asked, 2, 'asked once per run');
await v2Hitl.close();
