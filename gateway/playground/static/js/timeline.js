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
    default: break;
  }
  if (structure && structure.invoking_start) return ['tool call', 'tool-call'];
  if (structure && structure.tool_start) return ['tool arguments', 'tool-args'];
  if (structure && structure.tool_end) return ['tool output', 'tool-output'];
  if (isTokenAccounting(structure)) return ['token accounting', 'tokens'];
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
  }

  add(message) {
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
      message.text ? el('span', { class: 'step-text' }, message.text) : null,
      details(message.structure));
    this.group.append(entry);
    this.count += 1;
    entry.scrollIntoView({ block: 'nearest' });
  }

  error(message) {
    this.container.append(el('div', { class: 'step error' }, el('span', { class: 'step-kind' }, 'error'), message));
  }
}
