// A small Markdown renderer that builds DOM nodes directly: the text is never parsed as
// HTML, so raw HTML in an answer (<img onerror=...>, <script>) shows as the text it is.
// Links are kept only for http:, https: and mailto: URLs; images are shown as their alt
// text (an image would make the browser fetch from another origin).
// Supported: headings, paragraphs, fenced and indented code, block quotes, lists,
// rules, `code`, **strong**, *em*, _em_, [links](url), bare https:// links.

import { el } from './dom.js';

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

export function safeHref(raw) {
  try {
    const url = new URL(raw, window.location.href);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch (_) {
    return null;
  }
}

// A link target: no spaces, parentheses only in balanced pairs (one level), optional "title".
const URL_PART = '((?:[^()\\s]|\\([^()\\s]*\\))*)(?:\\s+"[^"]*")?';

const INLINE = new RegExp([
  '(`+)([\\s\\S]*?[^`])\\1(?!`)',                       // 1,2 code span
  '\\*\\*([\\s\\S]+?)\\*\\*',                            // 3 strong
  '__([\\s\\S]+?)__',                                    // 4 strong
  '\\*([^*\\s](?:[^*]*[^*\\s])?)\\*',                    // 5 em
  '\\b_([^_\\s](?:[^_]*[^_\\s])?)_\\b',                  // 6 em
  `!\\[([^\\]]*)\\]\\(${URL_PART}\\)`,                 // 7,8 image
  `\\[([^\\]]+)\\]\\(${URL_PART}\\)`,                  // 9,10 link
  '(https?:\\/\\/[^\\s<>()]*[^\\s<>().,;:!?\'"])',       // 11 bare link
].join('|'), 'g');

function link(href, children) {
  const safe = safeHref(href);
  if (!safe) return el('span', { class: 'unsafe-link', title: 'link removed: not http(s) or mailto' }, children);
  return el('a', { href: safe, target: '_blank', rel: 'noopener noreferrer nofollow' }, children);
}

export function renderInline(text) {
  const nodes = [];
  let last = 0;
  // matchAll works on a copy of the regex, so the recursive calls below (bold, links)
  // cannot disturb this loop's position.
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) nodes.push(text.slice(last, match.index));
    if (match[2] !== undefined) nodes.push(el('code', {}, match[2]));
    else if (match[3] !== undefined || match[4] !== undefined) nodes.push(el('strong', {}, renderInline(match[3] ?? match[4])));
    else if (match[5] !== undefined || match[6] !== undefined) nodes.push(el('em', {}, renderInline(match[5] ?? match[6])));
    else if (match[7] !== undefined) nodes.push(el('span', { class: 'image-alt', title: 'image not loaded' }, `[image: ${match[7]}]`));
    else if (match[9] !== undefined) nodes.push(link(match[10], renderInline(match[9])));
    else if (match[11] !== undefined) nodes.push(link(match[11], [match[11]]));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(text.slice(last));
  return nodes;
}

const FENCE = /^\s*(```|~~~)/;
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s*([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const ORDERED = /^\s*(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s*>\s?(.*)$/;
const INDENTED = /^( {4}|\t)(.*)$/;

function isBlockStart(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || BULLET.test(line)
    || ORDERED.test(line) || QUOTE.test(line);
}

export function renderMarkdown(source) {
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').split('\n');
  const root = el('div', { class: 'markdown' });
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    const fence = line.match(FENCE);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1;
      root.append(el('pre', {}, el('code', {}, body.join('\n'))));
      continue;
    }
    if (INDENTED.test(line)) {
      const body = [];
      while (i < lines.length && (INDENTED.test(lines[i]) || !lines[i].trim())) body.push(lines[i++].replace(INDENTED, '$2'));
      root.append(el('pre', {}, el('code', {}, body.join('\n').trimEnd())));
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      root.append(el(`h${heading[1].length}`, {}, renderInline(heading[2])));
      i += 1;
      continue;
    }
    if (RULE.test(line)) { root.append(el('hr')); i += 1; continue; }
    if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].match(QUOTE)[1]);
      root.append(el('blockquote', {}, renderMarkdown(body.join('\n'))));
      continue;
    }
    const ordered = ORDERED.test(line);
    if (ordered || BULLET.test(line)) {
      const pattern = ordered ? ORDERED : BULLET;
      const list = el(ordered ? 'ol' : 'ul');
      while (i < lines.length && pattern.test(lines[i])) {
        const match = lines[i].match(pattern);
        list.append(el('li', {}, renderInline(ordered ? match[2] : match[1])));
        i += 1;
      }
      root.append(list);
      continue;
    }
    const paragraph = [];
    while (i < lines.length && lines[i].trim() && !isBlockStart(lines[i])) paragraph.push(lines[i++].trim());
    if (!paragraph.length) paragraph.push(lines[i++].trim());
    root.append(el('p', {}, renderInline(paragraph.join('\n'))));
  }
  return root;
}
