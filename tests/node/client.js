// Calls a neuro-san gRPC server from Node, with stubs loaded at run time from protos/.
//
// Usage: node client.js HOST:PORT
// Prints one JSON object: the results of Concierge List, Function (also for an agent in a
// sub-folder), a MAXIMAL StreamingChat, and the status of a call to an unknown agent.
// Agent calls use the package-qualified AgentService with the agent in the `agent-name`
// metadata, which is how generated stubs in any language reach any agent.
'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTOS = path.resolve(__dirname, '..', '..', 'protos');

function loadPackage() {
  const definition = protoLoader.loadSync(
    ['neuro_san/api/grpc/agent.proto', 'neuro_san/api/grpc/concierge.proto'],
    {
      // protos/ holds our files and the vendored google/api/*; proto-loader ships the
      // well-known google/protobuf/struct.proto itself.
      includeDirs: [PROTOS],
      keepCase: true,
      enums: String,
      longs: Number,
      defaults: false,
      oneofs: true,
    },
  );
  return grpc.loadPackageDefinition(definition).dev.cognizant_ai.neuro_san.api.grpc;
}

// google.protobuf.Struct / Value as decoded by proto-loader → plain JSON values.
function fromValue(value) {
  if (value === null || value === undefined) return null;
  switch (value.kind) {
    case 'nullValue': return null;
    case 'numberValue': return value.numberValue;
    case 'stringValue': return value.stringValue;
    case 'boolValue': return value.boolValue;
    case 'structValue': return fromStruct(value.structValue);
    case 'listValue': return (value.listValue.values || []).map(fromValue);
    default: return null;
  }
}

function fromStruct(struct) {
  const out = {};
  for (const [key, value] of Object.entries((struct && struct.fields) || {})) out[key] = fromValue(value);
  return out;
}

function agentMetadata(agent) {
  const metadata = new grpc.Metadata();
  metadata.set('agent-name', agent);
  return metadata;
}

function deadline() {
  return { deadline: Date.now() + 20000 };
}

function unary(client, method, request, metadata) {
  return new Promise((resolve, reject) => {
    const callback = (error, response) => (error ? reject(error) : resolve(response));
    if (metadata) client[method](request, metadata, deadline(), callback);
    else client[method](request, deadline(), callback);
  });
}

function streamingChat(client, agent, text) {
  return new Promise((resolve, reject) => {
    const request = {
      user_message: { type: 'HUMAN', text },
      chat_filter: { chat_filter_type: 'MAXIMAL' },
    };
    const messages = [];
    const call = client.StreamingChat(request, agentMetadata(agent), deadline());
    call.on('data', (response) => {
      const message = response.response || {};
      messages.push({
        type: message.type,
        text: message.text || '',
        origin: (message.origin || []).map((o) => o.tool),
        structure: message.structure ? fromStruct(message.structure) : null,
        sly_data: message.sly_data ? fromStruct(message.sly_data) : null,
        history_length: message.chat_context
          ? (message.chat_context.chat_histories || []).reduce((n, h) => n + (h.messages || []).length, 0)
          : 0,
      });
    });
    call.on('error', reject);
    call.on('end', () => resolve(messages));
  });
}

async function main() {
  const target = process.argv[2];
  if (!target) throw new Error('usage: node client.js HOST:PORT');
  const api = loadPackage();
  const credentials = grpc.credentials.createInsecure();
  const agents = new api.agent.AgentService(target, credentials);
  const concierge = new api.concierge.ConciergeService(target, credentials);

  const listed = await unary(concierge, 'List', {});
  const fn = await unary(agents, 'Function', {}, agentMetadata('math_guy'));
  const deep = await unary(agents, 'Function', {}, agentMetadata('deep/math_guy'));
  const chat = await streamingChat(agents, 'math_guy', '6 * 7');
  let unknown = null;
  try {
    await unary(agents, 'Function', {}, agentMetadata('no_such_agent'));
  } catch (error) {
    unknown = { code: error.code, details: error.details };
  }
  process.stdout.write(JSON.stringify({
    list: (listed.agents || []).map((a) => a.agent_name),
    function: {
      description: fn.function.description,
      parameters: fromStruct(fn.function.parameters),
    },
    deep_function: deep.function.description,
    chat,
    unknown_agent: unknown,
  }) + '\n');
  agents.close();
  concierge.close();
}

main().catch((error) => {
  process.stderr.write(`node client failed: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
