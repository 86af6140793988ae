// SPDX-License-Identifier: Apache-2.0
// Responses WebSocket mode through the official OpenAI Node SDK's ResponsesWS
// (tests/cli/test_node_client.py).
//
//   node tests/node/responses_ws.mjs BASE_URL
//
// The SDK and `ws` are loaded from $OPENAI_NODE_DIR/node_modules (default: the repository's
// .node/). A tool loop continued with store: false, two lanes at once, a reconnect that gets
// previous_response_not_found then a fresh turn, and generate: false. One JSON line per turn
// ({name, events}), then a summary; exit status 1 if a step failed.
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.OPENAI_NODE_DIR || path.resolve(import.meta.dirname, '..', '..', '.node');
const require = createRequire(path.join(dir, 'node_modules', 'noop.js'));
const sdk = require('openai');
const OpenAI = sdk.OpenAI ?? sdk.default ?? sdk;
const { ResponsesWS } = require('openai/resources/responses/ws');

const client = new OpenAI({ baseURL: process.argv[2], apiKey: 'unused', maxRetries: 0 });
const model = 'gpt-oss-120b';
const weather = {
  type: 'function',
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const TERMINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);
// A turn ends on a terminal response event or the connection's error event (it carries
// status); a stream's own error event (no status) is followed by response.failed.
const endsTurn = (event) => TERMINAL.has(event.type) || (event.type === 'error' && 'status' in event);

/** A ResponsesWS whose events are queued per lane (stream_id; '' for the default lane). */
function open() {
  const ws = new ResponsesWS(client);
  const lanes = new Map();
  const lane = (id) => {
    if (!lanes.has(id)) lanes.set(id, { events: [], waiters: [] });
    return lanes.get(id);
  };
  ws.on('event', (event) => {
    const l = lane(event.stream_id ?? '');
    const waiter = l.waiters.shift();
    if (waiter) waiter(event);
    else l.events.push(event);
  });
  ws.on('error', () => {}); // error events are read from 'event' like the others
  const next = (id) => {
    const l = lane(id);
    if (l.events.length) return Promise.resolve(l.events.shift());
    return new Promise((resolve) => l.waiters.push(resolve));
  };
  const read = async (id = '') => {
    const events = [];
    while (!events.length || !endsTurn(events.at(-1))) events.push(await next(id));
    return events;
  };
  const turn = async (body) => {
    ws.send({ type: 'response.create', model, ...body });
    return read(body.stream_id ?? '');
  };
  return { ws, turn, read };
}

const lines = [];
function record(name, events) {
  lines.push({ name, events });
  console.log(JSON.stringify({ name, events }));
  return events;
}
const last = (events) => events.at(-1);
const check = (condition, message) => {
  if (!condition) throw new Error(message);
};

let ok = true;
try {
  const a = open();
  // A tool loop, continued with store: false from the connection's cache.
  let events = record('tool call', await a.turn({
    input: 'What is the weather in Paris?', tools: [weather], tool_choice: 'required', store: false,
  }));
  const first = last(events).response;
  const call = first.output.find((item) => item.type === 'function_call');
  check(call, 'no function call');
  events = record('tool answer', await a.turn({
    input: [{ type: 'function_call_output', call_id: call.call_id, output: '22C' }],
    tools: [weather], store: false, previous_response_id: first.id,
  }));
  check(last(events).type === 'response.completed', 'tool answer did not complete');
  check(last(events).response.previous_response_id === first.id, 'previous_response_id not echoed');

  // Two lanes at once.
  a.ws.send({ type: 'response.create', model, input: 'Count to 3.', store: false, stream_id: 'left' });
  a.ws.send({ type: 'response.create', model, input: 'Name a colour.', store: false, stream_id: 'right' });
  const [left, right] = await Promise.all([a.read('left'), a.read('right')]);
  record('lane left', left);
  record('lane right', right);
  check(left.every((e) => e.stream_id === 'left') && right.every((e) => e.stream_id === 'right'),
    'lane events not tagged');

  // generate: false, then a continuation of the warm-up.
  const warm = record('generate false', await a.turn({
    input: 'What is the weather in Oslo?', tools: [weather], store: false, generate: false,
  }));
  check(warm.length === 2 && last(warm).response.output.length === 0, 'warm-up generated');
  record('after warm-up', await a.turn({
    input: [], tools: [weather], tool_choice: 'required', store: false,
    previous_response_id: last(warm).response.id,
  }));
  a.ws.close({ code: 1000, reason: 'done' });

  // A reconnect has no cache: previous_response_not_found, then a fresh turn works.
  const b = open();
  const lost = await b.turn({ input: 'again', store: false, previous_response_id: first.id });
  lines.push({ name: 'reconnect', error: last(lost) });
  console.log(JSON.stringify({ name: 'reconnect', error: last(lost) }));
  check(last(lost).type === 'error' && last(lost).error.code === 'previous_response_not_found',
    `reconnect: ${JSON.stringify(last(lost))}`);
  record('fresh turn', await b.turn({ input: 'What is the weather in Paris? (again)', store: false }));
  b.ws.close({ code: 1000, reason: 'done' });
} catch (error) {
  ok = false;
  console.log(JSON.stringify({ name: 'failure', error: String(error).slice(0, 500) }));
}
console.log(JSON.stringify({ summary: true, ok, turns: lines.length }));
process.exit(ok ? 0 : 1);
