// Runs a neuro-san network with the official AG-UI client (@ag-ui/client's HttpAgent) and
// prints what it saw as JSON. Usage: node run.mjs <http base> <agent>
import { HttpAgent } from "@ag-ui/client";

const [base, agentName] = process.argv.slice(2);

async function turn(agent, text) {
  const types = [];
  agent.addMessage({ id: `u${agent.messages.length}`, role: "user", content: text });
  const { newMessages } = await agent.runAgent({}, {
    onEvent({ event }) { types.push(event.type); },
  });
  const said = newMessages.filter((m) => m.role === "assistant" && m.content).map((m) => m.content);
  return { types, said, roles: newMessages.map((m) => m.role) };
}

const agent = new HttpAgent({ url: `${base}/ag-ui/${agentName}` });
const first = await turn(agent, "What is 6 * 7?");
const state = agent.state;
const second = await turn(agent, "what did i ask?");

let missing;
try {
  const nobody = new HttpAgent({ url: `${base}/ag-ui/no_such_network` });
  nobody.addMessage({ id: "u0", role: "user", content: "hi" });
  await nobody.runAgent();
  missing = "no error";
} catch (error) {
  missing = String(error && error.message ? error.message : error);
}
console.log(JSON.stringify({ threadId: agent.threadId, first, state, second, missing }));
