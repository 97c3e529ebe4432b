// Drives the Tasks extension of a swarm MCP server with the official
// TypeScript client (@modelcontextprotocol/client, 2026-07-28) and tasks
// package (@modelcontextprotocol/ext-tasks). Run by mcp/tasks_interop_test.go.
//
//   node tasks.mjs URL answer            call approval, answer its pause, print the outcome
//   node tasks.mjs URL cancel            call approval, cancel the task, print the outcome
//   node tasks.mjs URL start             call approval, print the task reference and detach
//   node tasks.mjs URL finish REFERENCE  resume the task of REFERENCE, answer it, print the outcome
//   node tasks.mjs URL media             call charts (a plain tools/call), print its content
//
// Each prints one JSON object on stdout.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

const [url, mode, reference] = process.argv.slice(2);
const clientInfo = { name: "swarm-interop-tasks", version: "1.0.0" };
const protocolVersion = "2026-07-28";

const client = new Client(clientInfo, { capabilities: {}, versionNegotiation: { mode: { pin: protocolVersion } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
if (client.getProtocolEra() !== "modern") {
  throw new Error(`connected in the ${client.getProtocolEra()} era, want modern`);
}

// The host's request path for the task wire shapes, which the SDK client
// does not send itself: one POST per request with the routing headers.
let nextID = 0;
async function rawDispatch(request, options = {}) {
  const headers = new Headers({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": protocolVersion,
    "mcp-method": request.method,
  });
  const name = request.params?.taskId ?? request.params?.name;
  if (name !== undefined) headers.set("mcp-name", name);
  // The tasks package names the routing headers of its requests itself.
  for (const [k, v] of Object.entries(options.context?.headers ?? {})) headers.set(k, v);
  const resp = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: ++nextID, ...request }),
    signal: options.signal,
  });
  const text = await resp.text();
  let message;
  if ((resp.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (line.startsWith("data: ") && line.includes('"id"')) message = JSON.parse(line.slice(6));
    }
  } else {
    message = JSON.parse(text);
  }
  if (message === undefined) throw new Error(`${request.method}: HTTP ${resp.status}, no response in ${text}`);
  return message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result };
}

const elicited = [];
const session = createTaskSessionFromClient(client, {
  endpointId: "swarm-interop",
  rawDispatch,
  v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities: {} },
  onInputRequest: async (request) => {
    if (request.kind !== "elicitation") throw new Error(`unexpected input request ${request.kind}`);
    elicited.push(request.params.message);
    return { action: "accept", content: { message: "yes" } };
  },
});

function summary(execution, outcome) {
  const result = outcome.status === "completed" ? outcome.result : undefined;
  return {
    kind: execution.kind,
    taskId: execution.handle?.taskId,
    status: outcome.status,
    elicited,
    isError: result?.isError ?? false,
    structuredContent: result?.structuredContent,
    error: outcome.status === "failed" ? `${outcome.error.code ?? ""} ${outcome.error.message}` : undefined,
  };
}

try {
  let out;
  if (mode === "media") {
    const result = await client.callTool({ name: "charts", arguments: { input: "sales" } });
    out = {
      isError: result.isError ?? false,
      content: result.content.map((c) => ({
        type: c.type,
        text: c.text,
        mimeType: c.mimeType ?? c.resource?.mimeType,
        bytes: c.data !== undefined ? Buffer.from(c.data, "base64").length : c.resource?.blob !== undefined ? Buffer.from(c.resource.blob, "base64").length : undefined,
        head: c.data !== undefined ? Buffer.from(c.data, "base64").subarray(0, 4).toString("hex") : undefined,
      })),
    };
  } else if (mode === "finish") {
    const execution = await session.resumeTask(JSON.parse(reference));
    const { outcome } = await execution.settle();
    out = summary(execution, outcome);
  } else {
    const execution = await session.callTool("approval", { input: "book" }, { task: { preference: "allow" } });
    if (mode === "start") {
      if (execution.kind !== "task") throw new Error(`approval answered ${execution.kind}, want a task`);
      let ref;
      await execution.handoff((r) => {
        ref = r;
      });
      out = { kind: execution.kind, reference: ref };
    } else if (mode === "cancel") {
      await execution.cancel();
      const outcome = await execution.result();
      out = summary(execution, outcome);
    } else {
      const { outcome } = await execution.settle();
      out = summary(execution, outcome);
    }
  }
  console.log(JSON.stringify(out));
} finally {
  // A session's close cancels the tasks it still holds, and a handed-off
  // task must outlive this process: leave it to the process's exit.
  if (mode !== "start" && mode !== "media") await session.close();
  await client.close();
}
