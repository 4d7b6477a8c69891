// The network drawn from Connectivity: the front man on top, each layer below it the
// nodes first reached from the one above. Node kinds (agent, coded tool, external agent,
// MCP server, other tool) get their own class, and so colour and legend entry.

import { el, svg } from './dom.js';

const NODE_WIDTH = 150;
const NODE_HEIGHT = 38;
const LAYER_GAP = 84;
const NODE_GAP = 26;
const MARGIN = 16;

export const KIND_LABELS = {
  llm_agent: 'agent',
  coded_tool: 'coded tool',
  external_agent: 'external agent',
  mcp_server: 'MCP server',
  langchain_tool: 'LangChain tool',
  tool: 'tool',
};

// A tool that has no connectivity entry of its own is named by how it is referenced.
export function kindOf(name, entry) {
  if (entry && entry.display_as) return entry.display_as;
  if (name.startsWith('/')) return 'external_agent';
  if (/^https?:\/\//i.test(name)) return 'mcp_server';
  return 'tool';
}

export function buildModel(connectivity) {
  const entries = (connectivity && connectivity.connectivity_info) || [];
  const byName = new Map(entries.map((entry) => [entry.origin, entry]));
  const called = new Set(entries.flatMap((entry) => entry.tools || []));
  const front = (entries.find((entry) => !called.has(entry.origin)) || entries[0] || {}).origin;
  const depth = new Map();
  const order = [];
  if (front !== undefined) { depth.set(front, 0); order.push(front); }
  for (let index = 0; index < order.length; index += 1) {
    const entry = byName.get(order[index]);
    for (const tool of (entry && entry.tools) || []) {
      if (!depth.has(tool)) { depth.set(tool, depth.get(order[index]) + 1); order.push(tool); }
    }
  }
  for (const entry of entries) {  // unreachable nodes still shown, below the rest
    if (!depth.has(entry.origin)) { depth.set(entry.origin, Math.max(0, ...depth.values()) + 1); order.push(entry.origin); }
  }
  const nodes = order.map((name) => ({
    name, depth: depth.get(name), kind: kindOf(name, byName.get(name)), entry: byName.get(name), front: name === front,
  }));
  const edges = entries.flatMap((entry) => (entry.tools || []).map((tool) => [entry.origin, tool]));
  return { nodes, edges, front };
}

function layout(model) {
  const layers = [];
  for (const node of model.nodes) (layers[node.depth] ||= []).push(node);
  const widest = Math.max(1, ...layers.map((layer) => (layer ? layer.length : 0)));
  const width = MARGIN * 2 + widest * NODE_WIDTH + (widest - 1) * NODE_GAP;
  layers.forEach((layer, depth) => {
    if (!layer) return;
    const used = layer.length * NODE_WIDTH + (layer.length - 1) * NODE_GAP;
    layer.forEach((node, index) => {
      node.x = (width - used) / 2 + index * (NODE_WIDTH + NODE_GAP);
      node.y = MARGIN + depth * LAYER_GAP;
    });
  });
  return { width, height: MARGIN * 2 + (layers.length - 1) * LAYER_GAP + NODE_HEIGHT };
}

function shortLabel(name) {
  return name.length > 20 ? `${name.slice(0, 19)}…` : name;
}

// Draws into `container`; onSelect(node) is called on click (and Enter) on a node, and
// describe(node) may give a line (the Function's description) for the hover title.
// Returns {highlight(name|null)} to light up the node that is working.
export function drawGraph(container, connectivity, onSelect, describe = () => '') {
  const model = buildModel(connectivity);
  const { width, height } = layout(model);
  const byName = new Map(model.nodes.map((node) => [node.name, node]));
  const drawing = svg('svg', {
    viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'agent network', class: 'graph',
  });
  drawing.append(svg('defs', {}, svg('marker', {
    id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse',
  }, svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrowhead' }))));
  for (const [from, to] of model.edges) {
    const a = byName.get(from);
    const b = byName.get(to);
    if (!a || !b) continue;
    const x1 = a.x + NODE_WIDTH / 2;
    const y1 = a.y + NODE_HEIGHT;
    const x2 = b.x + NODE_WIDTH / 2;
    const y2 = b.y;
    const back = b.depth <= a.depth;
    const mid = (y1 + y2) / 2;
    const d = back
      ? `M ${x1} ${y1} C ${x1} ${y1 + 40}, ${x2 + 60} ${y2 - 40}, ${x2} ${y2}`
      : `M ${x1} ${y1} C ${x1} ${mid}, ${x2} ${mid}, ${x2} ${y2}`;
    drawing.append(svg('path', { d, class: `edge kind-${b.kind}`, 'marker-end': 'url(#arrow)', 'data-from': from, 'data-to': to }));
  }
  const groups = new Map();
  for (const node of model.nodes) {
    const label = KIND_LABELS[node.kind] || node.kind;
    const group = svg('g', {
      class: `node kind-${node.kind}${node.front ? ' front' : ''}`,
      transform: `translate(${node.x} ${node.y})`,
      tabindex: 0,
      role: 'button',
      'data-name': node.name,
      'data-kind': node.kind,
      onclick: () => onSelect(node),
      onkeydown: (event) => { if (event.key === 'Enter') onSelect(node); },
    },
    svg('title', {}, [`${node.name} (${node.front ? 'front man, ' : ''}${label})`, describe(node), 'click for details']
      .filter(Boolean).join('\n')),
    svg('rect', { width: NODE_WIDTH, height: NODE_HEIGHT, rx: 8, ry: 8 }),
    svg('text', { x: NODE_WIDTH / 2, y: 16, 'text-anchor': 'middle', class: 'node-name' }, shortLabel(node.name)),
    svg('text', { x: NODE_WIDTH / 2, y: 30, 'text-anchor': 'middle', class: 'node-kind' }, node.front ? `front man · ${label}` : label));
    groups.set(node.name, group);
    drawing.append(group);
  }
  const kinds = [...new Set(model.nodes.map((node) => node.kind))];
  const legend = el('ul', { class: 'legend' },
    kinds.map((kind) => el('li', { class: `kind-${kind}` }, el('span', { class: 'swatch' }), KIND_LABELS[kind] || kind)));
  container.replaceChildren(drawing, legend);
  let lit = null;
  return {
    model,
    highlight(name) {
      const next = name === null ? null : groups.get(name) || null;
      if (lit === next) return;
      if (lit) lit.classList.remove('working');
      lit = next;
      if (lit) lit.classList.add('working');
    },
  };
}
