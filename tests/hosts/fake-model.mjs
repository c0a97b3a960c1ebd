#!/usr/bin/env node
// A scripted model server for driving the real Claude Code, Codex and Gemini CLI in tests.
//
// It speaks just enough of the Anthropic Messages API (POST /v1/messages, streamed as SSE),
// of the OpenAI Responses API (POST /v1/responses, streamed as SSE; Codex, and GitHub Copilot
// CLI with COPILOT_PROVIDER_WIRE_API=responses) and of the Gemini API
// (POST /v1beta/models/M:streamGenerateContent?alt=sse and :generateContent) to play a script:
// each request of the host's main conversation gets the script's next step (one or more
// tool calls, or a closing text); a summarisation (compaction) request gets a summary; any
// other request (titles, quota probes, token counts) gets a short text. Usage figures are
// reported so that a step marked `"context": "full"` makes the host compact on its own.
//
// Usage: node fake-model.mjs --script FILE --log FILE [--port-file FILE]
// It listens on 127.0.0.1 on a free port, writes the port to --port-file (or prints
// `port N` on stdout), logs every request as one JSON line to --log, and exits when its
// parent closes stdin or after --lifetime seconds (600 by default).
//
// Script: {"steps": [STEP, ...], "agents": {"MARKER": [STEP, ...]}, "summary": "text",
//          "full_context_tokens": N}
//   A request whose user messages hold MARKER (a subagent's task) is served from its queue;
//   `${AGENT_ID}` in a step is the agent id the latest `spawn_agent` output handed back.
//   STEP: {"calls": [CALL, ...], "context": "full"?} | {"text": "...", "context": "full"?}
//   CALL: {"shell": "command", "timeout_ms": N?}            the host's shell tool
//       | {"tool": "Name", "input": {...}, "host": "claude-code"|"codex"|"gemini-cli"?,
//          "namespace": "multi_agent_v1"?}                  a named (namespaced) tool
//   A CALL or STEP with "host" (a name, or a list of them) is played only in that host; a
//   step left with no call is skipped.

import http from 'node:http';
import fs from 'node:fs';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, word, i, all) => {
    if (word.startsWith('--')) pairs.push([word.slice(2), all[i + 1]]);
    return pairs;
  }, []),
);
if (!args.script || !args.log) {
  console.error('usage: fake-model.mjs --script FILE --log FILE [--port-file FILE] [--lifetime S]');
  process.exit(2);
}

const script = JSON.parse(fs.readFileSync(args.script, 'utf8'));
const steps = script.steps ?? [];
const summaryText =
  script.summary ?? 'Summary: the user asked for a few shell commands; all of them ran.';
// Tokens reported for a step marked "context": "full": near the largest window a host's
// default model has (Claude Code's is 1,000,000), so every host compacts after it.
const FULL_CONTEXT = script.full_context_tokens ?? 990000;
let cursor = 0; // the next step of the main conversation
let ids = 0;
const nextId = (prefix) => `${prefix}_${String(++ids).padStart(6, '0')}`;

function log(entry) {
  fs.appendFileSync(args.log, JSON.stringify(entry) + '\n');
}

// ---------- what a request is ----------

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => {
      if (typeof part === 'string') return part;
      if (typeof part?.text === 'string') return part.text;
      if (part?.content !== undefined) return textOf(part.content);
      if (typeof part?.output === 'string') return part.output;
      return '';
    })
    .join('\n');
}

const SUMMARY_ASKS = [
  /<state_snapshot>/,
  /create a detailed summary of the conversation/i,
  /summar(y|ize|ise) (of )?(the|this) conversation/i,
  /context checkpoint compaction/i,
  /handoff summary/i,
];

// A Gemini request's turns as the other APIs' messages: role and text.
function geminiMessages(body) {
  return (body.contents ?? []).map((turn) => ({
    role: turn.role === 'model' ? 'assistant' : 'user',
    content: (turn.parts ?? []).map((part) => part.text ?? (part.functionResponse ? JSON.stringify(part.functionResponse.response ?? {}) : '')).join('\n'),
  }));
}

function isSummaryRequest(body) {
  const messages = body.messages ?? body.input ?? (body.contents ? geminiMessages(body) : []);
  // The ask is in the latest user message; a host may append a system note after it.
  const list = Array.isArray(messages) ? messages : [];
  const last = [...list].reverse().find((m) => m?.role === 'user') ?? list[list.length - 1];
  const system = body.systemInstruction ? textOf(body.systemInstruction.parts ?? []) : '';
  const texts = [textOf(last?.content ?? last), textOf(body.system), body.instructions ?? '', system];
  return texts.some((text) => SUMMARY_ASKS.some((re) => re.test(text)));
}

function isMainRequest(body) {
  if (body.contents) {
    return (body.tools ?? []).some((tool) => (tool.functionDeclarations ?? []).length > 0);
  }
  return Array.isArray(body.tools) && body.tools.length > 0;
}

// Subagents' conversations: a request whose user messages carry one of these markers is
// served from that marker's own queue (`"agents": {"MARKER": [STEP, ...]}`).
const agentQueues = Object.entries(script.agents ?? {}).map(([marker, queue]) => ({ marker, queue: [...queue] }));

function userText(body) {
  const messages = body.messages ?? body.input ?? (body.contents ? geminiMessages(body) : []);
  return (Array.isArray(messages) ? messages : [])
    .filter((m) => m?.role === 'user')
    .map((m) => textOf(m.content))
    .join('\n');
}

// The newest agent id a function call's output handed back (Codex's `spawn_agent`), which a
// step names as `${AGENT_ID}`.
function lastAgentId(body) {
  const items = Array.isArray(body.input) ? body.input : [];
  for (const item of [...items].reverse()) {
    if (item?.type !== 'function_call_output' || typeof item.output !== 'string') continue;
    try {
      const id = JSON.parse(item.output).agent_id;
      if (typeof id === 'string') return id;
    } catch {
      // not JSON: not a spawn's output
    }
  }
  return '';
}

// The next scripted step for `host` and this request, skipping steps with nothing for it.
function stepFor(host, body) {
  const text = userText(body);
  const agent = agentQueues.find(({ marker }) => text.includes(marker));
  const step = agent ? agent.queue.shift() ?? { text: 'Done.' } : nextStep(host);
  const id = lastAgentId(body);
  return id ? JSON.parse(JSON.stringify(step).replaceAll('${AGENT_ID}', id)) : step;
}

// Whether a Responses request comes from GitHub Copilot CLI (its tools: `bash`, `view`,
// `create`, `edit`) rather than Codex.
function isCopilot(body) {
  const names = new Set((body.tools ?? []).map((tool) => tool.name ?? tool.function?.name));
  return names.has('bash') && names.has('view') && names.has('create');
}

// Whether a step or call is for `host` (`"host"`: one name or a list; none: every host).
function playsIn(item, host) {
  return !item.host || [].concat(item.host).includes(host);
}

// The next step of the main conversation for `host`, skipping steps with nothing for it.
function nextStep(host) {
  while (cursor < steps.length) {
    const step = steps[cursor++];
    if (!playsIn(step, host)) continue;
    if (step.text !== undefined) return step;
    const calls = (step.calls ?? []).filter((call) => playsIn(call, host));
    if (calls.length > 0) return { ...step, calls };
  }
  return { text: 'Done.' };
}

// ---------- Anthropic Messages ----------

function anthropicCall(call) {
  if (call.shell !== undefined) {
    const input = { command: call.shell, description: 'scripted command' };
    if (call.timeout_ms !== undefined) input.timeout = call.timeout_ms;
    return { name: 'Bash', input };
  }
  return { name: call.tool, input: call.input ?? {} };
}

function anthropicReply(res, body, step) {
  const model = body.model ?? 'claude-fake';
  const inputTokens = step.context === 'full' ? FULL_CONTEXT : 1000;
  const blocks = [];
  if (step.text !== undefined) blocks.push({ type: 'text', text: step.text });
  for (const call of step.calls ?? []) {
    const { name, input } = anthropicCall(call);
    blocks.push({ type: 'tool_use', id: nextId('toolu'), name, input });
  }
  const stopReason = step.calls ? 'tool_use' : 'end_turn';
  const usage = { input_tokens: inputTokens, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const message = { id: nextId('msg'), type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage };
  if (!body.stream) {
    sendJson(res, 200, { ...message, content: blocks, stop_reason: stopReason });
    return;
  }
  const events = [['message_start', { type: 'message_start', message }]];
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } }]);
    } else {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } }]);
    }
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  events.push(['message_delta', { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 20 } }]);
  events.push(['message_stop', { type: 'message_stop' }]);
  sendSse(res, events);
}

// ---------- OpenAI Responses ----------

function codexCall(call, tools) {
  const names = new Set((tools ?? []).map((tool) => tool.name ?? tool.function?.name));
  if (call.shell !== undefined && names.has('bash') && !names.has('exec_command')) {
    // GitHub Copilot CLI's shell tool.
    const input = { command: call.shell, description: 'scripted command' };
    if (call.timeout_ms !== undefined) input.initial_wait = Math.max(1, Math.round(call.timeout_ms / 1000));
    if (call.background) input.mode = 'async';
    return { name: 'bash', input };
  }
  if (call.shell !== undefined) {
    if (names.has('exec_command')) {
      const input = { cmd: call.shell };
      if (call.timeout_ms !== undefined) input.yield_time_ms = call.timeout_ms;
      return { name: 'exec_command', input };
    }
    const input = { command: ['bash', '-lc', call.shell] };
    if (call.timeout_ms !== undefined) input.timeout_ms = call.timeout_ms;
    return { name: 'shell', input };
  }
  return { name: call.tool, input: call.input ?? {} };
}

function responsesReply(res, body, step) {
  const inputTokens = step.context === 'full' ? FULL_CONTEXT : 1000;
  const responseId = nextId('resp');
  const items = [];
  if (step.text !== undefined) {
    items.push({ type: 'message', role: 'assistant', id: nextId('msg'), status: 'completed', content: [{ type: 'output_text', text: step.text, annotations: [] }] });
  }
  for (const call of step.calls ?? []) {
    const { name, input } = codexCall(call, body.tools);
    if (call.custom) {
      items.push({ type: 'custom_tool_call', id: nextId('ctc'), call_id: nextId('call'), name, input: call.custom, status: 'completed' });
    } else {
      const item = { type: 'function_call', id: nextId('fc'), call_id: nextId('call'), name, arguments: JSON.stringify(input), status: 'completed' };
      if (call.namespace) item.namespace = call.namespace;
      items.push(item);
    }
  }
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + 20,
  };
  const response = { id: responseId, object: 'response', status: 'completed', model: body.model, output: items, usage };
  if (body.stream === false) {
    sendJson(res, 200, response);
    return;
  }
  const events = [['response.created', { type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }]];
  items.forEach((item, index) => {
    events.push(['response.output_item.added', { type: 'response.output_item.added', output_index: index, item }]);
    if (item.type === 'message') {
      events.push(['response.output_text.delta', { type: 'response.output_text.delta', output_index: index, item_id: item.id, content_index: 0, delta: item.content[0].text }]);
    }
    events.push(['response.output_item.done', { type: 'response.output_item.done', output_index: index, item }]);
  });
  events.push(['response.completed', { type: 'response.completed', response }]);
  sendSse(res, events);
}

// ---------- Gemini ----------

function geminiCall(call) {
  if (call.shell !== undefined) {
    const args = { command: call.shell, description: 'scripted command' };
    if (call.background) args.is_background = true;
    return { name: 'run_shell_command', args };
  }
  return { name: call.tool, args: call.input ?? {} };
}

function geminiReply(res, body, step, stream) {
  const promptTokens = step.context === 'full' ? FULL_CONTEXT : 1000;
  const parts = [];
  if (step.text !== undefined) parts.push({ text: step.text });
  for (const call of step.calls ?? []) parts.push({ functionCall: geminiCall(call) });
  const response = {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: promptTokens, candidatesTokenCount: 20, totalTokenCount: promptTokens + 20 },
    modelVersion: 'gemini-fake',
  };
  if (!stream) {
    sendJson(res, 200, response);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(`data: ${JSON.stringify(response)}\r\n\r\n`);
}

// ---------- OpenAI Chat Completions (OpenCode, through @ai-sdk/openai-compatible) ----------

function chatCall(call) {
  if (call.shell !== undefined) {
    const input = { command: call.shell, description: 'scripted command' };
    if (call.timeout_ms !== undefined) input.timeout = call.timeout_ms;
    return { name: 'bash', input };
  }
  return { name: call.tool, input: call.input ?? {} };
}

function chatReply(res, body, step) {
  const promptTokens = step.context === 'full' ? FULL_CONTEXT : 1000;
  const id = nextId('chatcmpl');
  const model = body.model ?? 'fake';
  const created = Math.floor(Date.now() / 1000);
  const usage = { prompt_tokens: promptTokens, completion_tokens: 20, total_tokens: promptTokens + 20 };
  const calls = (step.calls ?? []).map((call, index) => {
    const { name, input } = chatCall(call);
    return { index, id: nextId('call'), type: 'function', function: { name, arguments: JSON.stringify(input) } };
  });
  const finish = calls.length ? 'tool_calls' : 'stop';
  if (!body.stream) {
    const message = { role: 'assistant', content: step.text ?? null };
    if (calls.length) message.tool_calls = calls.map(({ index, ...call }) => call);
    sendJson(res, 200, { id, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: finish }], usage });
    return;
  }
  const chunk = (delta, finishReason = null, extra = {}) =>
    ({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra });
  const chunks = [chunk({ role: 'assistant', content: step.text ?? '' })];
  if (calls.length) chunks.push(chunk({ tool_calls: calls }));
  chunks.push(chunk({}, finish, { usage }));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n');
}

// ---------- plumbing ----------

function sendJson(res, status, value) {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendSse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join(''));
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      body = { unparsed: raw.slice(0, 2000) };
    }
    const path = req.url.split('?')[0];
    const api = path.endsWith('/messages')
      ? 'anthropic'
      : path.endsWith('/chat/completions')
        ? 'chat'
        : path.endsWith('/responses')
        ? 'responses'
        : /:(stream)?[gG]enerateContent$/.test(path)
          ? 'gemini'
          : 'other';
    let kind = 'other';
    if (api !== 'other' && req.method === 'POST') {
      kind = isSummaryRequest(body) ? 'summary' : isMainRequest(body) ? 'main' : 'side';
    }
    let step = null;
    const host = api === 'responses' && isCopilot(body)
      ? 'copilot-cli'
      : { anthropic: 'claude-code', responses: 'codex', gemini: 'gemini-cli', chat: 'opencode' }[api];
    if (kind === 'main') step = stepFor(host, body);
    if (kind === 'summary') step = { text: summaryText };
    if (kind === 'side') step = { text: 'ok' };
    log({ at: new Date().toISOString(), method: req.method, path, kind, cursor, step, body });
    if (api === 'anthropic' && step) return anthropicReply(res, body, step);
    if (api === 'responses' && step) return responsesReply(res, body, step);
    if (api === 'gemini' && step) return geminiReply(res, body, step, path.endsWith(':streamGenerateContent'));
    if (api === 'chat' && step) return chatReply(res, body, step);
    if (path.endsWith(':countTokens')) return sendJson(res, 200, { totalTokens: 1000 });
    if (path.endsWith('/count_tokens')) return sendJson(res, 200, { input_tokens: 1000 });
    if (path.endsWith('/models')) return sendJson(res, 200, { data: [], models: [] });
    sendJson(res, 200, {});
  });
});

server.on('connection', (socket) => socket.setNoDelay(true));
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  if (args['port-file']) fs.writeFileSync(args['port-file'], String(port));
  else console.log(`port ${port}`);
});

const lifetime = Number(args.lifetime ?? 600) * 1000;
setTimeout(() => process.exit(0), lifetime).unref();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
