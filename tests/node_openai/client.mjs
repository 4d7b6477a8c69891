// The official openai SDK for JavaScript against neuro-san's /v1: prints what it saw as JSON.
// Usage: node client.mjs <base url of /v1> <model>
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const out = {};

const models = [];
for await (const m of client.models.list()) models.push(m.id);
out.models = models;

const completion = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "hello from node" }],
});
out.completion = { content: completion.choices[0].message.content, finish: completion.choices[0].finish_reason,
                   total_tokens: completion.usage?.total_tokens };

const stream = await client.chat.completions.create({
  model, messages: [{ role: "user", content: "stream to node" }], stream: true,
  stream_options: { include_usage: true },
});
const pieces = [];
let usage = null;
for await (const chunk of stream) {
  for (const choice of chunk.choices) if (choice.delta.content) pieces.push(choice.delta.content);
  if (chunk.usage) usage = chunk.usage;
}
out.stream = { text: pieces.join(""), usage_seen: usage !== null };

const first = await client.responses.create({ model, input: "first from node" });
const second = await client.responses.create({ model, input: "second from node", previous_response_id: first.id });
out.responses = { first: first.output_text, second: second.output_text, previous: second.previous_response_id === first.id };

const events = [];
const rstream = await client.responses.create({ model, input: "events to node", stream: true });
for await (const event of rstream) events.push(event.type);
out.response_events = [events[0], events[events.length - 1]];

try {
  await client.chat.completions.create({ model: "no_such_model", messages: [{ role: "user", content: "x" }] });
  out.not_found = null;
} catch (error) {
  out.not_found = { name: error.constructor.name, status: error.status, code: error.code };
}
console.log(JSON.stringify(out));
