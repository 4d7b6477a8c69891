// The public HTTP API, and nothing else: list, function, connectivity, streaming_chat.
// Every call goes to this page's own origin, with the API key (if any) as a Bearer token.

const KEY_STORAGE = 'neuro-san-playground.api-key';

// status: the HTTP status of a refused call (0: no answer). inStream: the call was
// answered (HTTP 200) and its stream ended with an {"error": Status} line instead.
export class ApiError extends Error {
  constructor(status, message, body, inStream = false) {
    super(message);
    this.status = status;
    this.body = body;
    this.inStream = inStream;
    const details = (body && typeof body === 'object' && Array.isArray(body.details)) ? body.details : [];
    const info = details.find((detail) => String((detail && detail['@type']) || '').endsWith('google.rpc.ErrorInfo'));
    this.reason = String((info && info.reason) || '');
  }
}

// What a failure is, in a few words, for the line that shows it: an LLM provider's failure
// by its reason, a refused call by its HTTP status. An error inside a stream has no HTTP
// status of its own (the 200 was sent before it happened), so it never shows one.
export function errorLabel(error) {
  if (!(error instanceof ApiError)) return 'error';
  const http = !error.inStream && error.status ? `HTTP ${error.status}` : '';
  if (error.reason.startsWith('LLM_')) return `LLM error (${[error.reason, http].filter(Boolean).join(', ')})`;
  if (http) return http;
  return error.reason ? `error (${error.reason})` : 'error';
}

export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || '';
}

export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

function headers(extra = {}) {
  const result = { Accept: 'application/json', ...extra };
  const key = apiKey();
  if (key) result.Authorization = `Bearer ${key}`;
  return result;
}

// deep/math_guy stays a path; each segment is escaped.
export function agentPath(agent) {
  return agent.split('/').map(encodeURIComponent).join('/');
}

export function chatPath(agent) {
  return `/api/v1/${agentPath(agent)}/streaming_chat`;
}

async function failure(response) {
  const text = await response.text();
  let body = text;
  let message = text || response.statusText;
  try {
    body = JSON.parse(text);
    if (body && typeof body === 'object') message = String(body.message || body.error || text);
  } catch (_) {
    // not JSON: the text itself is the message
  }
  return new ApiError(response.status, message, body);
}

async function getJson(path) {
  let response;
  try {
    response = await fetch(path, { headers: headers(), cache: 'no-store', credentials: 'same-origin' });
  } catch (error) {
    throw new ApiError(0, `the server cannot be reached (${error.message})`, null);
  }
  if (!response.ok) throw await failure(response);
  return response.json();
}

export const listAgents = () => getJson('/api/v1/list');
export const getFunction = (agent) => getJson(`/api/v1/${agentPath(agent)}/function`);
export const getConnectivity = (agent) => getJson(`/api/v1/${agentPath(agent)}/connectivity`);

// POST streaming_chat and call onLine(object) for each JSON line as it arrives.
// A line {"error": Status} (an error after the stream began) becomes an ApiError.
export async function streamChat(agent, body, onLine, signal) {
  let response;
  try {
    response = await fetch(chatPath(agent), {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json', Accept: 'application/json-lines' }),
      body: JSON.stringify(body),
      cache: 'no-store',
      credentials: 'same-origin',
      signal,
    });
  } catch (error) {
    throw new ApiError(0, `the server cannot be reached (${error.message})`, null);
  }
  if (!response.ok) throw await failure(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const emit = (raw) => {
    const line = raw.trim();
    if (!line) return;
    const parsed = JSON.parse(line);
    if (parsed && parsed.error) {
      const status = parsed.error;
      throw new ApiError(0, String(status.message || 'stream failed'), status, true);
    }
    onLine(parsed);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      emit(line);
    }
  }
  buffer += decoder.decode();
  emit(buffer);
}
