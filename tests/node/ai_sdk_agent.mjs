// SPDX-License-Identifier: Apache-2.0
// A two-step tool loop through the Vercel AI SDK's OpenAI Responses provider
// (tests/cli/test_node_client.py).
//
//   node tests/node/ai_sdk_agent.mjs BASE_URL
//
// The packages are loaded from $OPENAI_NODE_DIR/node_modules (default: the repository's
// .node/). generateText and streamText each run get_weather (a tool with execute) and answer,
// with the provider's default store: true, so step 2 sends the step 1 items it can name as
// {"type": "item_reference", "id": ...}. One JSON line per run (the steps, the tool calls,
// the input item types each request sent), then a summary. Exit status 1 if any run failed.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.OPENAI_NODE_DIR || path.resolve(import.meta.dirname, '..', '..', '.node');
const require = createRequire(path.join(dir, 'node_modules', 'noop.js'));
const { generateText, streamText, stepCountIs, tool, jsonSchema } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');
const versionOf = (name) =>
  JSON.parse(readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8')).version;

const base = process.argv[2];
const sent = []; // the input item types of each POST /responses, in order
async function recordingFetch(url, init) {
  if (init?.body && String(url).endsWith('/responses')) {
    const input = JSON.parse(init.body).input ?? [];
    sent.push(Array.isArray(input) ? input.map((item) => item.type ?? 'message') : ['text']);
  }
  return fetch(url, init);
}
const provider = createOpenAI({ baseURL: base, apiKey: 'unused', fetch: recordingFetch });
const model = provider.responses('gpt-oss-120b');
const calls = [];
const tools = {
  get_weather: tool({
    description: 'Current weather for a city',
    inputSchema: jsonSchema({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    }),
    execute: async (input) => {
      calls.push(input);
      return { city: input.city ?? 'Paris', forecast: 'sunny', celsius: 21 };
    },
  }),
};
const request = {
  model,
  tools,
  stopWhen: stepCountIs(4),
  maxRetries: 0,
  prompt: 'What is the weather in Paris? Use get_weather.',
};

async function run(name, body) {
  sent.length = 0;
  calls.length = 0;
  try {
    const result = await body();
    return {
      name,
      ok: true,
      steps: result.steps.length,
      finishReasons: result.steps.map((step) => step.finishReason),
      toolCalls: calls.length,
      text: result.text,
      sent: [...sent],
    };
  } catch (error) {
    return { name, ok: false, error: String(error).slice(0, 400), sent: [...sent] };
  }
}

const results = [
  await run('generateText', () => generateText(request)),
  await run('streamText', async () => {
    const stream = streamText({ ...request, onError: () => {} });
    let failure;
    for await (const part of stream.fullStream) if (part.type === 'error') failure ??= part.error;
    if (failure) throw failure;
    return { steps: await stream.steps, text: await stream.text };
  }),
];
for (const result of results) console.log(JSON.stringify(result));
const failed = results.filter((r) => !r.ok).length;
console.log(
  JSON.stringify({
    summary: true,
    ai: versionOf('ai'),
    provider: versionOf('@ai-sdk/openai'),
    runs: results.length,
    failed,
  }),
);
process.exit(failed ? 1 : 0);
