// The JS @a2a-js/sdk client against the host, over both bindings: card, blocking send,
// multi-turn interrupt resolution, get, list, cancel, stream, push configs delivered to a
// loopback receiver, and our errors as the SDK parses them. Needs OPENWOP_BASE_URL and OPENWOP_API_KEY.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";

import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";
import {
  ExtendedAgentCardNotConfiguredError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from "@a2a-js/sdk/errors";

const BASE = process.env.OPENWOP_BASE_URL?.replace(/\/$/, "");
const KEY = process.env.OPENWOP_API_KEY;
if (!BASE || !KEY) {
  throw new Error("set OPENWOP_BASE_URL and OPENWOP_API_KEY");
}

// Every request carries the Bearer key the card's security scheme names.
const fetchImpl = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${KEY}`);
  return fetch(input, { ...init, headers });
};

function factoryFor(binding) {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: [binding],
  });
  return new ClientFactory(options);
}

async function clientFor(binding) {
  return factoryFor(binding).createFromUrl(BASE);
}

const dataPart = (value) => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" });
const textPart = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });

function message(parts, { skill, taskId = "", contextId = "" } = {}) {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts,
    metadata: skill ? { openwop: { skill } } : undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const request = (msg, configuration = undefined) => ({ tenant: "", message: msg, configuration, metadata: undefined });

test("card resolves with JSONRPC first, HTTP+JSON, and every routed workflow", async () => {
  const client = await clientFor("JSONRPC");
  const card = await client.getAgentCard();
  assert.equal(card.supportedInterfaces[0].protocolBinding, "JSONRPC");
  assert.ok(card.supportedInterfaces.some((i) => i.protocolBinding === "HTTP+JSON"));
  const skills = card.skills.map((s) => s.id);
  for (const id of ["echo", "approval", "slow"]) assert.ok(skills.includes(id), id);
  assert.equal(card.capabilities.streaming, true);
});

for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  test(`${binding}: blocking send, get, list`, async () => {
    const client = await clientFor(binding);
    const task = await client.sendMessage(request(message([dataPart({ hello: binding })], { skill: "echo" })));
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.deepEqual(task.artifacts[0].parts[0].content.value, { hello: binding });
    const got = await client.getTask({ tenant: "", id: task.id });
    assert.equal(got.id, task.id);
    assert.equal(got.contextId, task.contextId);
    const listed = await client.listTasks({
      tenant: "",
      contextId: "",
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 100,
      pageToken: "",
      statusTimestampAfter: undefined,
    });
    assert.ok(listed.tasks.some((t) => t.id === task.id));
  });

  test(`${binding}: multi-turn interrupt resolution`, async () => {
    const client = await clientFor(binding);
    const first = await client.sendMessage(request(message([dataPart({ title: "ship it" })], { skill: "approval" })));
    assert.equal(first.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(first.metadata.openwop.interrupt.kind, "approval");
    const done = await client.sendMessage(request(message([dataPart({ action: "accept" })], { taskId: first.id })));
    assert.equal(done.id, first.id);
    assert.equal(done.contextId, first.contextId);
    assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
    await assert.rejects(
      client.sendMessage(request(message([textPart("again")], { taskId: first.id }))),
      (e) => e instanceof UnsupportedOperationError,
    );
  });

  test(`${binding}: cancel a slow task`, async () => {
    const client = await clientFor(binding);
    const task = await client.sendMessage(
      request(message([dataPart({ ms: 60000 })], { skill: "slow" }), {
        acceptedOutputModes: [],
        taskPushNotificationConfig: undefined,
        returnImmediately: true,
      }),
    );
    assert.ok([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(task.status.state));
    const cancelled = await client.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    assert.equal(cancelled.status.state, TaskState.TASK_STATE_CANCELED);
    await assert.rejects(client.cancelTask({ tenant: "", id: task.id, metadata: undefined }), (e) => e instanceof TaskNotCancelableError);
  });

  test(`${binding}: stream sends the task first`, async () => {
    const client = await clientFor(binding);
    const events = [];
    for await (const event of client.sendMessageStream(request(message([dataPart({ title: "stream" })], { skill: "approval" })))) {
      events.push(event);
    }
    assert.ok(events.length >= 1);
    assert.equal(events[0].payload.$case, "task");
    for (const e of events.slice(1)) assert.ok(["statusUpdate", "artifactUpdate"].includes(e.payload.$case), e.payload.$case);
    const last = events.at(-1).payload;
    const state = last.$case === "task" ? last.value.status.state : last.value.status.state;
    assert.equal(state, TaskState.TASK_STATE_INPUT_REQUIRED);
  });

  test(`${binding}: an unknown task is TaskNotFoundError`, async () => {
    const client = await clientFor(binding);
    await assert.rejects(client.getTask({ tenant: "", id: "nobody/r-0000000000000000000000" }), (e) => e instanceof TaskNotFoundError);
  });
}

// A loopback webhook receiver recording each push (the host runs with
// --egress-allow-loopback for it).
async function pushReceiver() {
  const received = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      received.push({ path: req.url, headers: req.headers, body: JSON.parse(body || "null") });
      res.writeHead(200).end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  const wait = async (predicate) => {
    for (let i = 0; i < 200; i++) {
      const found = received.filter(predicate);
      if (found.length) return found;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no matching push; got ${JSON.stringify(received)}`);
  };
  return { url, received, wait, close: () => server.close() };
}

for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  test(`${binding}: a push config registered by the SDK is delivered, its token never read back`, async () => {
    const receiver = await pushReceiver();
    const token = `js-token-${randomUUID()}`;
    try {
      const client = await clientFor(binding);
      const first = await client.sendMessage(request(message([dataPart({ title: "push" })], { skill: "approval" })));
      assert.equal(first.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      const created = await client.createTaskPushNotificationConfig({
        tenant: "",
        id: "",
        taskId: first.id,
        url: `${receiver.url}/js/${binding}`,
        token,
        authentication: undefined,
      });
      assert.ok(created.id);
      assert.equal(created.taskId, first.id);
      assert.equal(created.token, "");
      const got = await client.getTaskPushNotificationConfig({ tenant: "", taskId: first.id, id: created.id });
      assert.equal(got.url, created.url);
      assert.equal(got.token, "");
      const listed = await client.listTaskPushNotificationConfig({ tenant: "", taskId: first.id, pageSize: 0, pageToken: "" });
      assert.deepEqual(listed.configs.map((c) => c.id), [created.id]);

      const [status] = await receiver.wait((r) => r.body?.statusUpdate);
      assert.equal(status.path, `/js/${binding}`);
      assert.equal(status.headers.authorization, `Bearer ${token}`);
      assert.equal(status.headers["content-type"], "application/a2a+json");
      assert.equal(status.body.statusUpdate.status.state, "TASK_STATE_INPUT_REQUIRED");

      await client.sendMessage(request(message([dataPart({ action: "accept" })], { taskId: first.id })));
      const [final] = await receiver.wait((r) => r.body?.task);
      assert.equal(final.body.task.id, first.id);
      assert.equal(final.body.task.status.state, "TASK_STATE_COMPLETED");

      for (let i = 0; i < 2; i++) {
        await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: first.id, id: created.id });
      }
      await assert.rejects(
        client.getTaskPushNotificationConfig({ tenant: "", taskId: first.id, id: created.id }),
        (e) => e instanceof TaskNotFoundError,
      );
    } finally {
      receiver.close();
    }
  });
}

// Per-agent cards: R comes from GET /agents over plain HTTP; a client built from the host
// card with R on its interfaces (the SDK's tenant decorator then sends R on every request)
// resolves the agent's own card through GetExtendedAgentCard.
for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  test(`${binding}: the extended card for an agent's routing value`, async () => {
    const resp = await fetchImpl(`${BASE}/agents`);
    assert.equal(resp.status, 200);
    const { agents } = await resp.json();
    const entry = agents.find((a) => a.agentId === "workflow-runner");
    const r = entry.a2aTenant;
    const hostCard = (await clientFor(binding)).agentCard;
    assert.equal(hostCard.capabilities.extendedAgentCard, true);
    assert.ok(hostCard.supportedInterfaces.every((i) => !i.tenant), "the public card lists no R");
    const withTenant = (tenant) => ({
      ...hostCard,
      supportedInterfaces: hostCard.supportedInterfaces.map((i) => ({ ...i, tenant })),
    });

    const agentClient = await factoryFor(binding).createFromAgentCard(withTenant(r));
    const card = await agentClient.getAgentCard();
    assert.equal(card.name, entry.persona);
    assert.equal(card.version, entry.packVersion);
    assert.equal(card.description, entry.description ?? entry.label);
    assert.deepEqual(card.skills.map((s) => s.id), entry.workflows);
    assert.ok(card.supportedInterfaces.length > 0 && card.supportedInterfaces.every((i) => i.tenant === r));
    // R routes only: a task sent through the agent's client is the caller's own.
    const task = await agentClient.sendMessage(request(message([dataPart({ via: "agent card" })], { skill: "echo" })));
    assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
    const run = await fetchImpl(`${BASE}/runs/${task.id.replace("/", "~2F")}`);
    assert.equal(run.status, 200);

    const stranger = await factoryFor(binding).createFromAgentCard(withTenant("ag-AAAAAAAAAAAAAAAAAAAAAA"));
    await assert.rejects(stranger.getAgentCard(), (e) => e instanceof ExtendedAgentCardNotConfiguredError);
  });
}

// A plain A2A client: it knows nothing of OpenWOP, so its messages carry no metadata at
// all. The host card's default skill (tagged `default`; `clarify`, which asks one question
// and completes with the answer) starts its tasks.
const plain = (text, taskId = "") => message([textPart(text)], { taskId });
const stateOf = (event) => event.payload.value.status.state;

test("plain: the card names its default skill", async () => {
  const card = (await clientFor("JSONRPC")).agentCard;
  assert.deepEqual(card.skills.filter((s) => s.tags.includes("default")).map((s) => s.id), ["clarify"]);
  assert.ok(card.description.includes("message.metadata.openwop.skill"));
});

for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  test(`${binding}: plain send and multi-turn on the same task`, async () => {
    const client = await clientFor(binding);
    const first = await client.sendMessage(request(plain("hello")));
    assert.equal(first.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const done = await client.sendMessage(request(plain("ship it", first.id)));
    assert.equal(done.id, first.id);
    assert.equal(done.contextId, first.contextId);
    assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(done.history.length, 2);
    assert.deepEqual(done.artifacts[0].parts[0].content.value, { answer: "ship it" });
  });

  test(`${binding}: plain stream, then continue the task streaming`, async () => {
    const client = await clientFor(binding);
    const events = [];
    for await (const e of client.sendMessageStream(request(plain("stream it")))) events.push(e);
    assert.equal(events[0].payload.$case, "task");
    assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_INPUT_REQUIRED);
    const more = [];
    for await (const e of client.sendMessageStream(request(plain("go on", events[0].payload.value.id)))) more.push(e);
    assert.equal(stateOf(more.at(-1)), TaskState.TASK_STATE_COMPLETED);
  });

  test(`${binding}: plain subscribe to an input-required task, followed to completion`, async () => {
    const client = await clientFor(binding);
    const task = await client.sendMessage(request(plain("wait for me")));
    assert.equal(task.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    let ended = false;
    const following = (async () => {
      const events = [];
      for await (const e of client.resubscribeTask({ tenant: "", id: task.id })) events.push(e);
      ended = true;
      return events;
    })();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(ended, false, "the stream stays open while the task waits for input");
    const done = await client.sendMessage(request(plain("done now", task.id)));
    assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
    const events = await following;
    assert.equal(events[0].payload.$case, "task");
    assert.equal(stateOf(events[0]), TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(stateOf(events.at(-1)), TaskState.TASK_STATE_COMPLETED);
  });

  test(`${binding}: plain push config create, get, list, delete`, async () => {
    const receiver = await pushReceiver();
    try {
      const client = await clientFor(binding);
      const task = await client.sendMessage(request(plain("push me")));
      const created = await client.createTaskPushNotificationConfig({
        tenant: "",
        id: "",
        taskId: task.id,
        url: `${receiver.url}/plain/${binding}`,
        token: "plain-token",
        authentication: undefined,
      });
      assert.ok(created.id);
      const got = await client.getTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: created.id });
      assert.equal(got.url, created.url);
      assert.equal(got.token, "");
      const listed = await client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 0, pageToken: "" });
      assert.deepEqual(listed.configs.map((c) => c.id), [created.id]);
      for (let i = 0; i < 2; i++) {
        await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: task.id, id: created.id });
      }
      const after = await client.listTaskPushNotificationConfig({ tenant: "", taskId: task.id, pageSize: 0, pageToken: "" });
      assert.deepEqual(after.configs, []);
      // Finished, the task still takes a config (it never fires).
      await client.sendMessage(request(plain("finish", task.id)));
      const late = await client.createTaskPushNotificationConfig({
        tenant: "",
        id: "",
        taskId: task.id,
        url: `${receiver.url}/late`,
        token: "",
        authentication: undefined,
      });
      assert.equal(late.taskId, task.id);
    } finally {
      receiver.close();
    }
  });
}
