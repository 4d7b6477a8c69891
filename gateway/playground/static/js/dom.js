// DOM helpers. Everything that reaches the page goes through el() or text nodes:
// strings are never parsed as HTML (the page's Trusted Types policy forbids it anyway).

export function $(id) {
  return document.getElementById(id);
}

// el('div', {class: 'x', onclick: fn}, 'text', child) -> element.
// Attribute values are set with setAttribute and never interpreted as markup; callers
// pass only attributes that cannot run code (no on* strings, no style).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

export function show(node, visible) {
  node.hidden = !visible;
}

export function prettyJson(value) {
  return JSON.stringify(value, null, 2);
}
