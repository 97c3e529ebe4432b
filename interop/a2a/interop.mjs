// Interop check of the Swarm A2A server with the official A2A JavaScript
// client (@a2a-js/sdk): card discovery, send, stream, resuming an
// input-required task with a follow-up message, subscribe, cancel, list,
// and errors (a finished task's subscription, an oversized body).
//
// Usage: node interop.mjs BASE_URL [TOKEN]
//
// The server at BASE_URL must serve these swarms (the Go test that runs
// this script does): echo (answers "hello back"), approver (asks
// "approve?" with context "costs $5", then answers "approved and done")
// and slow (never answers on its own). With A2A_PARTS=1 it also sends a
// file part to thumbnailer (whose model checks that the PNG arrived) and
// expects its thumbnail back as a file artifact, and answers inspector
// (which asks for a screenshot, then checks that the PNG arrived) with a
// follow-up message carrying a file part, and reads both messages back
// with their files from the tasks' history. Exits 1 on the first failed
// check.

import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { Role, TaskState } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';

const [base, token] = process.argv.slice(2);
if (!base) {
  console.error('usage: node interop.mjs BASE_URL [TOKEN]');
  process.exit(2);
}

let checks = 0;
function check(cond, what, detail) {
  checks++;
  if (!cond) {
    throw new Error(`FAILED: ${what}${detail === undefined ? '' : ': ' + JSON.stringify(detail)}`);
  }
  console.log(`ok ${checks} - ${what}`);
}

// fetch with the bearer token, for the card and every call.
const authFetch = (url, init = {}) => {
  const headers = new Headers(init.headers);
  if (token) headers.set('Authorization', `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

const factory = new ClientFactory({
  transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
});

// Each swarm is an agent whose base URL is BASE/a2a/{swarm}/.
const connect = (swarm) => factory.createFromUrl(`${base}/a2a/${swarm}/`);

const textMessage = (text, extra = {}) => ({
  messageId: randomUUID(),
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text } }],
  ...extra,
});

const partText = (p) => (p?.content?.$case === 'text' ? p.content.value : undefined);
const stateName = (s) => TaskState[s] ?? String(s);

async function collect(stream) {
  const out = [];
  for await (const ev of stream) out.push(ev);
  return out;
}

const summary = (events) =>
  events
    .map((e) => {
      const p = e.payload;
      switch (p?.$case) {
        case 'task':
          return `task:${stateName(p.value.status?.state)}`;
        case 'statusUpdate':
          return `status:${stateName(p.value.status?.state)}`;
        case 'artifactUpdate':
          return `artifact:${partText(p.value.artifact?.parts?.[0])}`;
        default:
          return p?.$case ?? 'empty';
      }
    })
    .join(' ');

async function main() {
  // 1. Discovery: the agent card.
  const echo = await connect('echo');
  const card = await echo.getAgentCard();
  check(card.name === 'echo', 'card: name', card.name);
  check(card.capabilities?.streaming === true, 'card: streaming capability', card.capabilities);
  check(card.skills?.[0]?.tags?.includes('echo'), 'card: skill tags', card.skills);
  check(card.supportedInterfaces?.[0]?.protocolBinding === 'JSONRPC', 'card: JSON-RPC interface', card.supportedInterfaces);
  if (token) {
    check(card.securitySchemes?.bearer !== undefined, 'card: bearer security scheme', card.securitySchemes);
  }

  // 2. Send: a blocking SendMessage returns the completed task.
  const sent = await echo.sendMessage({ message: textMessage('hello') });
  check(sent.status?.state === TaskState.TASK_STATE_COMPLETED, 'send: completed', sent.status);
  check(partText(sent.artifacts?.[0]?.parts?.[0]) === 'hello back', 'send: result artifact', sent.artifacts);
  const got = await echo.getTask({ id: sent.id });
  check(got.id === sent.id && got.status?.state === TaskState.TASK_STATE_COMPLETED, 'getTask: same task, completed', got.status);

  // 3. Stream.
  const streamed = await collect(echo.sendMessageStream({ message: textMessage('hello again') }));
  const s = summary(streamed);
  check(s.startsWith('task:TASK_STATE_WORKING') && s.endsWith('artifact:hello back status:TASK_STATE_COMPLETED'), 'stream: task, updates, artifact, completed', s);

  // 4. Input required, then a follow-up message on the same task resumes it.
  const approver = await connect('approver');
  const first = await collect(approver.sendMessageStream({ message: textMessage('buy it') }));
  check(summary(first) === 'task:TASK_STATE_WORKING status:TASK_STATE_INPUT_REQUIRED', 'resume: stream stops at input-required', summary(first));
  const question = first.at(-1).payload.value;
  check(partText(question.status?.message?.parts?.[0]) === 'approve?\n\ncosts $5', 'resume: the question is the status message', question.status);
  const taskId = question.taskId;
  const contextId = question.contextId;
  const second = await collect(
    approver.sendMessageStream({ message: textMessage('yes', { taskId, contextId }) }),
  );
  check(summary(second).endsWith('artifact:approved and done status:TASK_STATE_COMPLETED'), 'resume: follow-up completes the task', summary(second));
  check(second.every((e) => e.payload.value.taskId === taskId || e.payload.value.id === taskId), 'resume: same task id throughout');
  const resumed = await approver.getTask({ id: taskId });
  check(resumed.history?.length === 3, 'resume: history holds question and answer', resumed.history);
  let refused;
  try {
    await approver.sendMessage({ message: textMessage('yes again', { taskId }) });
  } catch (e) {
    refused = e;
  }
  check(refused !== undefined && /TASK_STATE_COMPLETED/.test(String(refused)), 'resume: a completed task refuses another message', String(refused));

  // 5. Cancel.
  const slow = await connect('slow');
  const working = await slow.sendMessage({
    message: textMessage('take your time'),
    configuration: { acceptedOutputModes: [], returnImmediately: true },
  });
  check(working.status?.state === TaskState.TASK_STATE_WORKING, 'cancel: task is working', working.status);
  // SubscribeToTask (resubscribeTask in this client) follows it until the cancel.
  const subscription = slow.resubscribeTask({ id: working.id });
  const firstEvent = await subscription.next(); // subscribed: now cancel
  const followed = collect(subscription).then((rest) => [firstEvent.value, ...rest]);
  const canceled = await slow.cancelTask({ id: working.id });
  check(canceled.status?.state === TaskState.TASK_STATE_CANCELED, 'cancel: task is canceled', canceled.status);
  const sub = summary(await followed);
  check(sub === 'task:TASK_STATE_WORKING status:TASK_STATE_CANCELED', 'subscribe: the stream ends canceled', sub);
  const after = await slow.getTask({ id: working.id });
  check(after.status?.state === TaskState.TASK_STATE_CANCELED, 'cancel: getTask says canceled', after.status);
  const listed = await slow.listTasks({ pageSize: 10 });
  check(listed.tasks?.some((t) => t.id === working.id), 'listTasks: includes the task', listed);

  // 6. Subscribing to a finished task is refused as unsupported (there are
  // no updates to follow), not an internal error.
  let finished;
  try {
    await collect(echo.resubscribeTask({ id: sent.id }));
  } catch (e) {
    finished = e;
  }
  check(finished !== undefined && /unsupported|-32004/i.test(String(finished)) && !/-32603/.test(String(finished)),
    'subscribe: a finished task is UnsupportedOperation', String(finished));

  // 7. A body over the 1 MiB limit is refused with 413.
  const big = await authFetch(`${base}/a2a/echo/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { pad: 'x'.repeat(1100000) } }),
  });
  check(big.status === 413, 'limit: a body over 1 MiB gets 413', big.status);

  // 8. Files: a PNG sent as a file part reaches the swarm, and the
  // thumbnail its tool attached comes back as a file artifact.
  if (process.env.A2A_PARTS === '1') {
    const thumbnailer = await connect('thumbnailer');
    const png = Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(20000, 7)]);
    const withFile = {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [
        { content: { $case: 'text', value: 'make a thumbnail' }, filename: '', mediaType: '' },
        { content: { $case: 'raw', value: png }, filename: 'photo.png', mediaType: 'image/png' },
      ],
    };
    const done = await thumbnailer.sendMessage({ message: withFile });
    check(done.status?.state === TaskState.TASK_STATE_COMPLETED, 'files: the task with a file part completes', done.status);
    const art = done.artifacts?.find((a) => a.artifactId === 'part-1');
    const file = art?.parts?.[0];
    check(file?.content?.$case === 'raw' && file.mediaType === 'image/png', 'files: the thumbnail is a file artifact', art);
    const bytes = Buffer.from(file.content.value);
    check(bytes.length === 6000 && bytes.subarray(0, 4).toString('latin1') === '\x89PNG', 'files: the artifact holds the thumbnail bytes', bytes.length);
    // The task's history holds the message as sent: its text, and the
    // PNG as a file part with its bytes and media type.
    const sentFile = (m) => m?.parts?.find((p) => p.content?.$case === 'raw');
    const pngIn = (m) => {
      const f = sentFile(m);
      return f?.mediaType === 'image/png' && Buffer.from(f.content.value).equals(png);
    };
    const thumbTask = await thumbnailer.getTask({ id: done.id });
    const asked0 = thumbTask.history?.[0];
    check(partText(asked0?.parts?.[0]) === 'make a thumbnail' && asked0?.parts?.length === 2 && pngIn(asked0),
      'files: getTask history holds the text and the PNG file part', asked0?.parts?.map((p) => [p.content?.$case, p.mediaType, p.filename]));

    // A follow-up message answers an input-required task with a file.
    const inspector = await connect('inspector');
    const asked = await inspector.sendMessage({ message: textMessage('my app crashes') });
    check(asked.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED, 'files: the inspector asks for a screenshot', asked.status);
    const answer = {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      taskId: asked.id,
      contextId: asked.contextId,
      parts: [
        { content: { $case: 'text', value: 'here is the screenshot you asked for' }, filename: '', mediaType: '' },
        { content: { $case: 'raw', value: png }, filename: 'screen.png', mediaType: 'image/png' },
      ],
    };
    const seen = await inspector.sendMessage({ message: answer });
    check(seen.status?.state === TaskState.TASK_STATE_COMPLETED && partText(seen.artifacts?.[0]?.parts?.[0]) === 'the screenshot shows the error',
      'files: a follow-up message with a file part reaches the model', seen.status);
    const inspected = await inspector.getTask({ id: asked.id });
    const answered = inspected.history?.at(-1);
    check(inspected.history?.length === 3 && partText(answered?.parts?.[0]) === 'here is the screenshot you asked for' && answered?.parts?.length === 2 && pngIn(answered),
      'files: getTask history holds the follow-up text and its PNG file part', answered?.parts?.map((p) => [p.content?.$case, p.mediaType, p.filename]));
  }

  // 9. An unknown task is an error, not a crash.
  let notFound;
  try {
    await echo.getTask({ id: 'no-such-task' });
  } catch (e) {
    notFound = e;
  }
  check(notFound !== undefined && /not found/i.test(String(notFound)), 'getTask: unknown task is TaskNotFound', String(notFound));

  console.log(`PASS ${checks} checks`);
}

main().catch((e) => {
  console.error(e?.stack ?? String(e));
  process.exit(1);
});
