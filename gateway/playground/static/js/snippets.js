// "Copy as" for the last request: curl against this origin, grpcurl against the gRPC
// port, and Python (standard library only). The API key is never written into a
// snippet: it is read from $NEURO_SAN_API_KEY when the page has one.

const SERVICE = 'dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat';
const DEFAULT_GRPC_TARGET = '127.0.0.1:30011';

function shellQuote(text) {
  return `'${String(text).replace(/'/g, `'"'"'`)}'`;
}

export function curlSnippet(request, origin, withKey) {
  const lines = [
    `curl -N -X POST ${shellQuote(origin + request.path)}`,
    `  -H 'Content-Type: application/json'`,
  ];
  if (withKey) lines.push(`  -H "Authorization: Bearer $NEURO_SAN_API_KEY"`);
  lines.push(`  -d ${shellQuote(JSON.stringify(request.body))}`);
  return lines.join(' \\\n');
}

export function grpcurlSnippet(request, withKey) {
  const lines = [`grpcurl -plaintext -H ${shellQuote(`agent-name: ${request.agent}`)}`];
  if (withKey) lines.push(`  -H "authorization: Bearer $NEURO_SAN_API_KEY"`);
  lines.push(`  -d ${shellQuote(JSON.stringify(request.body))}`);
  lines.push(`  ${DEFAULT_GRPC_TARGET} ${SERVICE}`);
  return `# the server's gRPC port (default 30011)\n${lines.join(' \\\n')}`;
}

// The body as a raw triple-quoted string for json.loads (readable, and JSON's own
// backslashes stay as they are); a body that holds three quotes in a row falls back to
// one quoted line.
function pythonJsonLiteral(body) {
  const text = JSON.stringify(body, null, 2);
  const fence = "'".repeat(3);
  return text.includes(fence) ? JSON.stringify(JSON.stringify(body)) : `r${fence}${text}${fence}`;
}

export function pythonSnippet(request, origin, withKey) {
  const headers = withKey
    ? '{"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["NEURO_SAN_API_KEY"]}'
    : '{"Content-Type": "application/json"}';
  return [
    'import json',
    withKey ? 'import os' : null,
    'import urllib.request',
    '',
    `body = json.loads(${pythonJsonLiteral(request.body)})`,
    'request = urllib.request.Request(',
    `    ${JSON.stringify(origin + request.path)},`,
    `    data=json.dumps(body).encode(), headers=${headers}, method="POST",`,
    ')',
    'with urllib.request.urlopen(request) as reply:',
    '    for line in reply:  # one JSON object per line',
    '        message = json.loads(line)["response"]',
    '        print(message["type"], message.get("text", ""))',
    '',
  ].filter((line) => line !== null).join('\n');
}
