// The playground page: agent list, network graph, conversation, thinking timeline,
// sly_data in and out, copy-as and export. State lives here; rendering is in the
// other modules. Nothing from the server is ever turned into HTML.

import {
  ApiError, apiKey, chatPath, errorLabel, getConnectivity, getFunction, listAgents, setApiKey, streamChat,
} from './api.js';
import { $, el, prettyJson, show } from './dom.js';
import { drawGraph, KIND_LABELS } from './graph.js';
import { renderMarkdown } from './markdown.js';
import { curlSnippet, grpcurlSnippet, pythonSnippet } from './snippets.js';
import { Timeline, workingNode } from './timeline.js';

const state = {
  agents: [],
  agent: null,
  ready: false,      // the chosen agent's Function and Connectivity came: it can be sent to
  func: null,
  graph: null,
  chatContext: null,
  turns: [],
  lastRequest: null,
  streaming: false,
  retry: null,       // what to run again once an API key is given after a 401
};

const timeline = new Timeline($('timeline'));

// The banner is for what stops the page (the list, an agent that cannot be shown); a
// failed turn is shown in its own answer box only.
function showError(error, retry) {
  const banner = $('error');
  banner.replaceChildren(el('strong', {}, `${errorLabel(error)}: `), error.message || String(error));
  show(banner, true);
  askForKeyIf401(error, retry);
}

function askForKeyIf401(error, retry) {
  if (!(error instanceof ApiError) || error.inStream || error.status !== 401) return;
  state.retry = retry || null;
  show($('key-panel'), true);
  $('api-key').focus();
}

function clearError() {
  show($('error'), false);
}

// --- agents ----------------------------------------------------------------------

function renderAgentList() {
  const query = $('agent-search').value.trim().toLowerCase();
  const list = $('agent-list');
  const matching = state.agents.filter((agent) => {
    const haystack = [agent.agent_name, agent.description || '', ...(agent.tags || [])].join(' ').toLowerCase();
    return !query || haystack.includes(query);
  });
  list.replaceChildren(...matching.map((agent) => el('li', {},
    el('button', {
      type: 'button',
      class: `agent${agent.agent_name === state.agent ? ' selected' : ''}`,
      'data-agent': agent.agent_name,
      onclick: () => selectAgent(agent.agent_name),
    },
    el('span', { class: 'agent-name' }, agent.agent_name),
    agent.description ? el('span', { class: 'agent-description' }, agent.description) : null,
    el('span', { class: 'tags' }, (agent.tags || []).map((tag) => el('span', { class: 'tag' }, tag)))))));
  if (!matching.length) list.append(el('li', { class: 'hint' }, state.agents.length ? 'No agent matches.' : 'No agents.'));
}

async function loadAgents() {
  try {
    const reply = await listAgents();
    state.agents = reply.agents || [];
    clearError();
    renderAgentList();
    const wanted = decodeURIComponent(window.location.hash.slice(1));
    if (wanted && !state.agent) selectAgent(wanted);
  } catch (error) {
    showError(error, loadAgents);
  }
}

// Nothing of the previous agent stays on screen or sendable while the next one loads,
// nor after it fails to (an unknown name typed into the address bar, say).
function forgetAgentView() {
  state.ready = false;
  state.func = null;
  state.graph = null;
  $('graph').replaceChildren();
  show($('node-details'), false);
  for (const control of ['user-input', 'send', 'new-conversation']) $(control).disabled = true;
}

async function selectAgent(name) {
  if (state.streaming) return;
  state.agent = name;
  if (window.location.hash.slice(1) !== encodeURIComponent(name)) window.location.hash = encodeURIComponent(name);
  renderAgentList();
  resetConversation();
  forgetAgentView();
  $('agent-header').replaceChildren(el('h2', {}, name), el('p', { class: 'hint' }, 'loading…'));
  try {
    const [func, connectivity] = await Promise.all([getFunction(name), getConnectivity(name)]);
    if (state.agent !== name) return;
    clearError();
    state.func = func.function || {};
    const listed = state.agents.find((agent) => agent.agent_name === name);
    const description = (listed && listed.description) || state.func.description || '';
    const samples = ((connectivity.metadata || {}).sample_queries || []).filter((sample) => typeof sample === 'string');
    // replaceChildren would show a null as the text "null": leave absent parts out.
    $('agent-header').replaceChildren(...[el('h2', {}, name), description ? el('p', {}, description) : null,
      samples.length ? el('div', { class: 'samples' }, el('span', { class: 'hint' }, 'try: '),
        samples.map((sample) => el('button', {
          type: 'button', class: 'sample', onclick: () => { $('user-input').value = sample; $('user-input').focus(); },
        }, sample))) : null].filter(Boolean));
    state.graph = drawGraph($('graph'), connectivity, showNode,
      (node) => (node.front ? state.func.description || '' : ''));
    state.ready = true;
    for (const control of ['user-input', 'send', 'new-conversation']) $(control).disabled = false;
    $('user-input').focus();
  } catch (error) {
    if (state.agent !== name) return;
    const missing = error instanceof ApiError && error.status === 404;
    $('agent-header').replaceChildren(el('h2', {}, name), el('p', { class: 'hint' }, missing
      ? `"${name}" does not exist on this server: pick an agent network on the left.`
      : 'This agent network cannot be shown now: pick it again, or another one on the left.'));
    showError(error, () => selectAgent(name));
  }
}

// The public API publishes the front man's Function; other nodes show what
// Connectivity says of them (and an external agent's own Function is fetched).
async function showNode(node) {
  const box = $('node-details');
  const label = KIND_LABELS[node.kind] || node.kind;
  const rows = [el('h3', {}, node.name, el('span', { class: 'kind' }, ` ${node.front ? 'front man · ' : ''}${label}`))];
  let func = null;
  if (node.front) func = state.func;
  else if (node.kind === 'external_agent') {
    try {
      func = (await getFunction(node.name.replace(/^\/+/, ''))).function;
    } catch (error) {
      rows.push(el('p', { class: 'hint' }, `Function not available: ${error.message}`));
    }
  }
  if (func) {
    if (func.description) rows.push(el('p', {}, func.description));
    if (func.parameters) rows.push(el('pre', {}, prettyJson(func.parameters)));
  } else if (!rows[1]) {
    rows.push(el('p', { class: 'hint' }, 'The HTTP API publishes the Function of a network\'s front man only.'));
  }
  const metadata = node.entry && node.entry.metadata;
  if (metadata && Object.keys(metadata).length) rows.push(el('pre', {}, prettyJson(metadata)));
  const tools = (node.entry && node.entry.tools) || [];
  if (tools.length) rows.push(el('p', {}, `calls: ${tools.join(', ')}`));
  box.replaceChildren(...rows);
  show(box, true);
}

// --- conversation ----------------------------------------------------------------

function resetConversation() {
  state.chatContext = null;
  state.turns = [];
  state.lastRequest = null;
  $('conversation').replaceChildren();
  $('sly-out').textContent = '(none yet)';
  show($('snippet'), false);
  timeline.clear();
  for (const button of ['copy-curl', 'copy-grpcurl', 'copy-python', 'export']) $(button).disabled = true;
  if (state.graph) state.graph.highlight(null);
}

function parseSlyData() {
  const text = $('sly-in').value.trim();
  const errorLine = $('sly-in-error');
  show(errorLine, false);
  if (!text) return { ok: true, value: undefined };
  try {
    const value = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('must be a JSON object');
    return { ok: true, value };
  } catch (error) {
    errorLine.textContent = `sly_data: ${error.message}`;
    show(errorLine, true);
    return { ok: false };
  }
}

function setBusy(busy) {
  state.streaming = busy;
  $('send').disabled = busy;
  $('new-conversation').disabled = busy;
  $('send').textContent = busy ? 'Working…' : 'Send';
  if (!busy) $('working').textContent = '';
}

async function send(textOverride) {
  const text = textOverride ?? $('user-input').value.trim();
  if (!text || !state.agent || !state.ready || state.streaming) return;
  const sly = parseSlyData();
  if (!sly.ok) return;
  // stream_tokens: the answer (and each agent's reply) arrives as TOKEN_DELTA lines while
  // the models write it; the complete messages follow as without it.
  const body = { user_message: { text }, chat_filter: { chat_filter_type: 'MAXIMAL' }, stream_tokens: true };
  if (state.chatContext) body.chat_context = state.chatContext;
  if (sly.value !== undefined) body.sly_data = sly.value;
  const agent = state.agent;
  state.lastRequest = { agent, path: chatPath(agent), body };
  for (const button of ['copy-curl', 'copy-grpcurl', 'copy-python']) $(button).disabled = false;
  const turn = { user: text, sly_data_in: sly.value ?? null, messages: [], answer: null, sly_data_out: null };
  const answerBox = el('div', { class: 'message agent pending' }, el('p', { class: 'hint' }, 'thinking…'));
  $('conversation').append(el('div', { class: 'message user' }, text), answerBox);
  $('user-input').value = '';
  timeline.startTurn(text);
  clearError();
  setBusy(true);
  let final = null;
  let growing = '';
  try {
    await streamChat(agent, body, (line) => {
      const message = line.response;
      if (!message) return;
      if (message.type === 'TOKEN_DELTA') {
        // The front man's answer grows in its box as plain text (markdown once complete);
        // every agent's writing and thinking grows in the timeline. Deltas are not kept
        // in the turn: the complete messages that follow are.
        if ((message.origin || []).length === 1 && message.delta_kind !== 'REASONING') {
          growing += message.text || '';
          answerBox.replaceChildren(el('p', { class: 'growing' }, growing));
        }
        timeline.addDelta(message);
        return;
      }
      turn.messages.push(message);
      timeline.add(message);
      const working = workingNode(message);
      if (state.graph) state.graph.highlight(working);
      $('working').textContent = working ? `· ${working} working` : '';
      if (message.type === 'AGENT_FRAMEWORK') final = message;
    });
    if (!final) throw new ApiError(0, 'the stream ended without a final answer', null);
    turn.answer = final.text || '';
    turn.sly_data_out = final.sly_data ?? null;
    if (final.chat_context) state.chatContext = final.chat_context;
    answerBox.replaceChildren(renderMarkdown(turn.answer));
    answerBox.classList.remove('pending');
    if (final.sly_data !== undefined) $('sly-out').textContent = prettyJson(final.sly_data);
  } catch (error) {
    // Shown once, in the turn's answer box; the timeline marks where the turn stopped.
    const label = errorLabel(error);
    answerBox.replaceChildren(el('p', { class: 'error-text' }, el('strong', {}, `${label}: `), error.message || String(error)));
    answerBox.classList.remove('pending');
    answerBox.classList.add('failed');
    timeline.error(`${label}, shown in the conversation`);
    askForKeyIf401(error, () => send(text));
  } finally {
    state.turns.push(turn);
    $('export').disabled = false;
    if (state.graph) state.graph.highlight(null);
    setBusy(false);
  }
}

// --- copy as, export ---------------------------------------------------------------

async function copySnippet(kind) {
  const request = state.lastRequest;
  if (!request) return;
  const origin = window.location.origin;
  const withKey = Boolean(apiKey());
  const text = kind === 'curl' ? curlSnippet(request, origin, withKey)
    : kind === 'grpcurl' ? grpcurlSnippet(request, withKey)
      : pythonSnippet(request, origin, withKey);
  const box = $('snippet');
  box.textContent = text;
  box.dataset.kind = kind;
  show(box, true);
  try {
    await navigator.clipboard.writeText(text);
  } catch (_) {
    // the clipboard may be refused (no focus, permissions): the snippet is shown anyway
  }
}

function exportConversation() {
  const document_ = {
    agent: state.agent,
    exported_at: new Date().toISOString(),
    turns: state.turns,
    chat_context: state.chatContext,
  };
  const blob = new Blob([JSON.stringify(document_, null, 2)], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const link = el('a', { href: url, download: `${(state.agent || 'conversation').replace(/\W+/g, '_')}-conversation.json` });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// --- API key ---------------------------------------------------------------------

function useKey() {
  setApiKey($('api-key').value.trim());
  $('api-key').value = '';
  show($('key-panel'), false);
  clearError();
  const retry = state.retry;
  state.retry = null;
  if (retry) retry();
  else if (!state.agents.length) loadAgents();
}

function wire() {
  $('agent-search').addEventListener('input', renderAgentList);
  $('send').addEventListener('click', () => send());
  $('user-input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) send();
  });
  $('new-conversation').addEventListener('click', resetConversation);
  $('copy-curl').addEventListener('click', () => copySnippet('curl'));
  $('copy-grpcurl').addEventListener('click', () => copySnippet('grpcurl'));
  $('copy-python').addEventListener('click', () => copySnippet('python'));
  $('export').addEventListener('click', exportConversation);
  $('api-key-save').addEventListener('click', useKey);
  $('api-key').addEventListener('keydown', (event) => { if (event.key === 'Enter') useKey(); });
  $('api-key-forget').addEventListener('click', () => { setApiKey(''); $('api-key').value = ''; });
  $('key-toggle').addEventListener('click', () => show($('key-panel'), $('key-panel').hidden));
  // Back/forward and edited URLs (#agent_name) pick that agent.
  window.addEventListener('hashchange', () => {
    const wanted = decodeURIComponent(window.location.hash.slice(1));
    if (wanted && wanted !== state.agent) selectAgent(wanted);
  });
}

wire();
loadAgents();
