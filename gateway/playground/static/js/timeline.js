// The MAXIMAL stream as a thinking timeline: consecutive messages from the same origin
// share a group, indented by how deep that origin is in the network. Every text shown
// here comes from the stream and is untrusted: it only ever becomes text nodes.

import { el, prettyJson } from './dom.js';

export function originPath(origin) {
  return (origin || []).map((part) => part.tool);
}

export function originLabel(origin) {
  return originPath(origin).join('.') || '(server)';
}

// The node that is working: the last tool of the message's origin.
export function workingNode(message) {
  const path = originPath(message.origin);
  return path.length ? path[path.length - 1] : null;
}

function isTokenAccounting(structure) {
  return structure && typeof structure === 'object' && 'total_tokens' in structure;
}

// The stream reports usage twice, as neuro-san does: the network's, then the request's total
// (with `models`). Which one this is, for its label.
function accountingScope(structure) {
  const caveats = structure.caveats || [];
  const total = 'models' in structure || String(caveats[0] || '').startsWith('Request total');
  return total ? 'request total' : 'network';
}

function usageKey(structure) {
  return `${structure.total_tokens}/${structure.successful_requests}`;
}

// What kind of step a message is, as a short label and a class name.
export function classify(message) {
  const structure = message.structure || null;
  switch (message.type) {
    case 'SYSTEM': return ['instructions', 'system'];
    case 'HUMAN': return ['user message', 'human'];
    case 'AI': return ['agent answer', 'ai'];
    case 'AGENT_TOOL_RESULT': return ['tool result', 'tool-result'];
    case 'AGENT_PROGRESS': return ['progress', 'progress'];
    case 'AGENT_FRAMEWORK': return ['final answer', 'framework'];
    case 'TOKEN_DELTA': return message.reasoning ? ['thinking…', 'delta reasoning'] : ['writing…', 'delta'];
    default: break;
  }
  if (structure && structure.invoking_start) return ['tool call', 'tool-call'];
  if (structure && structure.tool_start) return ['tool arguments', 'tool-args'];
  if (structure && structure.tool_end) return ['tool output', 'tool-output'];
  if (isTokenAccounting(structure)) return [`token accounting (${accountingScope(structure)})`, 'tokens'];
  return ['agent message', 'agent'];
}

function details(structure) {
  if (structure === undefined || structure === null) return null;
  if (isTokenAccounting(structure)) {
    const summary = `${structure.total_tokens} tokens (${structure.prompt_tokens ?? '?'} in, `
      + `${structure.completion_tokens ?? '?'} out), ${structure.time_taken_in_seconds ?? '?'} s`;
    return el('details', {}, el('summary', {}, summary), el('pre', {}, prettyJson(structure)));
  }
  if (structure.invoking_start) {
    return el('div', { class: 'call' }, el('code', {}, String(structure.invoked_agent_name ?? '')),
      el('pre', {}, prettyJson(structure.params ?? {})));
  }
  return el('details', {}, el('summary', {}, 'structure'), el('pre', {}, prettyJson(structure)));
}

export class Timeline {
  constructor(container) {
    this.container = container;
    this.group = null;
    this.groupOrigin = null;
    this.count = 0;
    this.live = null;
    this.usageShown = null;
  }

  clear() {
    this.container.replaceChildren();
    this.group = null;
    this.groupOrigin = null;
    this.count = 0;
  }

  // A turn separator, so a continued conversation keeps each turn's steps apart.
  startTurn(text) {
    this.container.append(el('div', { class: 'turn' }, el('span', {}, 'you: '), text));
    this.group = null;
    this.groupOrigin = null;
    this.usageShown = null;
  }

  add(message) {
    this.live = null;
    if (isTokenAccounting(message.structure) && !message.text) {
      // The request's total with the very numbers just shown for the network: shown once.
      const key = `${originLabel(message.origin)}:${usageKey(message.structure)}`;
      if (key === this.usageShown) return;
      this.usageShown = key;
    }
    const label = originLabel(message.origin);
    if (label !== this.groupOrigin || !this.group) {
      const depth = Math.min(originPath(message.origin).length, 6);
      this.group = el('section', { class: `group depth-${depth}`, 'data-origin': label },
        el('h4', {}, label));
      this.container.append(this.group);
      this.groupOrigin = label;
    }
    const [kind, className] = classify(message);
    const entry = el('div', { class: `step ${className}`, 'data-type': message.type || '' },
      el('span', { class: 'step-kind' }, kind),
      message.text || message.type === 'TOKEN_DELTA' ? el('span', { class: 'step-text' }, message.text) : null,
      details(message.structure));
    this.group.append(entry);
    this.count += 1;
    entry.scrollIntoView({ block: 'nearest' });
  }

  // A piece of an agent's reply (or reasoning) as it is written: appended to that agent's
  // live entry, which a complete message (or another kind of delta) closes.
  addDelta(message) {
    const reasoning = message.delta_kind === 'REASONING';
    const label = originLabel(message.origin);
    const live = this.live;
    if (live && live.label === label && live.reasoning === reasoning && this.groupOrigin === label) {
      live.text.textContent += message.text || '';
      return;
    }
    this.add({ type: 'TOKEN_DELTA', origin: message.origin, text: message.text || '', reasoning });
    const entry = this.group.lastElementChild;
    this.live = { label, reasoning, text: entry.querySelector('.step-text') };
  }

  error(message) {
    this.container.append(el('div', { class: 'step error' }, el('span', { class: 'step-kind' }, 'error'), message));
  }
}
