// A remote A2A agent served by @a2a-js/sdk's own server (Express), for an openwop
// workflow to call. A first message containing "ask" gets INPUT_REQUIRED with a question,
// and the next message of the same task completes it with an artifact quoting the answer;
// one containing "reject" is REJECTED; any other message completes at once with a text
// and a data part. Its card carries `tenant: ""` (the SDK's types require the field).
// Usage: node a2a_agent.mjs PORT
import express from 'express';
import { AGENT_CARD_PATH, TaskState, Role } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { recordHeaders } from './record.mjs';

const port = Number(process.argv[2]);
const card = {
  name: 'outbound-js-agent',
  description: 'The remote agent an openwop workflow calls (tests/peers/outbound)',
  version: '1.0.0',
  supportedInterfaces: [
    { url: `http://127.0.0.1:${port}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
  ],
  capabilities: { streaming: false, pushNotifications: false, extensions: [] },
  defaultInputModes: ['text/plain', 'application/json'],
  defaultOutputModes: ['text/plain', 'application/json'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Answers or asks', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {},
  securityRequirements: [],
  signatures: [],
};

const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const data = (value) => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const textOf = (message) =>
  (message?.parts ?? []).filter((p) => p.content?.$case === 'text').map((p) => p.content.value).join('\n');

function agentMessage(taskId, contextId, parts) {
  return { messageId: crypto.randomUUID(), taskId, contextId, role: Role.ROLE_AGENT, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

function status(taskId, contextId, state, message) {
  return AgentEvent.statusUpdate({
    taskId, contextId, metadata: undefined,
    status: { state, message, timestamp: new Date().toISOString() },
  });
}

class Agent {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const said = textOf(ctx.userMessage);
    const asked = ctx.task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    if (!ctx.task) {
      bus.publish(AgentEvent.task({
        id: taskId, contextId, artifacts: [], history: [ctx.userMessage], metadata: undefined,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      }));
    }
    if (!asked && said.includes('reject')) {
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_REJECTED,
        agentMessage(taskId, contextId, [text('Not my kind of job.')])));
      bus.finished();
      return;
    }
    if (!asked && said.includes('ask')) {
      bus.publish(status(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED,
        agentMessage(taskId, contextId, [text('Which colour?')])));
      bus.finished();
      return;
    }
    const parts = asked ? [text(`Painted ${said}.`)] : [text(`echo: ${said}`), data({ said, by: '@a2a-js/sdk' })];
    bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: crypto.randomUUID(), name: 'answer', description: '', parts, metadata: undefined, extensions: [] },
    }));
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, undefined));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    bus.publish(status(taskId, '', TaskState.TASK_STATE_CANCELED, undefined));
    bus.finished();
  }
}

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Agent());
const app = express();
app.use(express.json());
app.use(recordHeaders('js-a2a'));
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, '127.0.0.1');
