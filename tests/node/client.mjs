// SPDX-License-Identifier: Apache-2.0
// Streams from a server through the official OpenAI Node SDK (tests/cli/test_node_client.py).
//
//   node tests/node/client.mjs BASE_URL [N]
//
// The SDK is loaded from $OPENAI_NODE_DIR/node_modules (default: the repository's .node/).
// N Responses streams (client.responses.stream + finalResponse, every other one with a
// function tool) and two Chat Completions streams (client.chat.completions.stream +
// finalChatCompletion, with and without tools); one JSON line per stream, then a summary.
// Exit status 1 if any stream failed.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.OPENAI_NODE_DIR || path.resolve(import.meta.dirname, '..', '..', '.node');
const require = createRequire(path.join(dir, 'node_modules', 'noop.js'));
const sdk = require('openai');
const OpenAI = sdk.OpenAI ?? sdk.default ?? sdk;
const sdkPackage = path.join(dir, 'node_modules', 'openai', 'package.json');
const version = JSON.parse(readFileSync(sdkPackage, 'utf8')).version;

const base = process.argv[2];
const count = Number(process.argv[3] ?? 20);
const client = new OpenAI({ baseURL: base, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};
const chatWeather = {
  type: 'function',
  function: { name: weather.name, description: weather.description, parameters: weather.parameters },
};

async function run(name, body) {
  try {
    return { name, ok: true, ...(await body()) };
  } catch (error) {
    return { name, ok: false, error: String(error).slice(0, 300) };
  }
}

const results = [];
for (let i = 0; i < count; i++) {
  const tools = i % 2 === 0;
  results.push(await run(`responses ${i}${tools ? ' tools' : ''}`, async () => {
    const stream = client.responses.stream({
      model: 'gpt-oss-120b',
      input: `question ${i}`,
      ...(tools ? { tools: [weather] } : {}),
      metadata: { seed: String(i) },
    });
    let events = 0;
    for await (const _event of stream) events++;
    const response = await stream.finalResponse();
    return { events, status: response.status, output: response.output.map((item) => item.type) };
  }));
}
for (const tools of [true, false]) {
  results.push(await run(`chat${tools ? ' tools' : ''}`, async () => {
    const stream = client.chat.completions.stream({
      model: 'gpt-oss-120b',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      ...(tools ? { tools: [chatWeather] } : {}),
    });
    let events = 0;
    for await (const _chunk of stream) events++;
    const completion = await stream.finalChatCompletion();
    const choice = completion.choices[0];
    return { events, status: choice.finish_reason, output: Object.keys(choice.message) };
  }));
}
for (const result of results) console.log(JSON.stringify(result));
const failed = results.filter((r) => !r.ok).length;
console.log(JSON.stringify({ summary: true, sdk: version, streams: results.length, failed }));
process.exit(failed ? 1 : 0);
