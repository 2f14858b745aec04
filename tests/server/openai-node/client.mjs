// specd serve through the official openai client: models, completions and chat, whole and
// streamed, and a refused request as the client's APIError. Environment: SPECD_BASE_URL,
// SPECD_API_KEY, SPECD_EXPECTED_TEXT (what `specd run` printed greedy for PROMPT, 24 tokens).
import assert from "node:assert/strict";
import OpenAI from "openai";

const PROMPT = "Once upon a time";
const client = new OpenAI({
  baseURL: process.env.SPECD_BASE_URL,
  apiKey: process.env.SPECD_API_KEY,
  timeout: 60_000,
  maxRetries: 0,
});
const expected = process.env.SPECD_EXPECTED_TEXT;

const models = await client.models.list();
assert.equal(models.data.length, 1);
const model = models.data[0].id;

const whole = await client.completions.create({ model, prompt: PROMPT, max_tokens: 24, temperature: 0 });
assert.equal(whole.choices[0].text, expected);
assert.equal(whole.usage.completion_tokens > 0, true);
assert.equal(typeof whole.usage.tau, "number");

let streamed = "";
const stream = await client.completions.create({ model, prompt: PROMPT, max_tokens: 24, temperature: 0, stream: true });
for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? "";
assert.equal(streamed, expected);

const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Tell a story." }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
assert.equal(chat.choices[0].message.role, "assistant");
let chatStreamed = "";
const chatStream = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0, stream: true });
for await (const chunk of chatStream) chatStreamed += chunk.choices[0]?.delta?.content ?? "";
assert.equal(chatStreamed, chat.choices[0].message.content);

try {
  await client.completions.create({ model, prompt: PROMPT, temperature: 5 });
  assert.fail("temperature 5 was accepted");
} catch (e) {
  assert.ok(e instanceof OpenAI.APIError, String(e));
  assert.equal(e.status, 400);
  assert.equal(e.param, "temperature");
}

const unauthorised = new OpenAI({ baseURL: process.env.SPECD_BASE_URL, apiKey: "wrong", maxRetries: 0 });
await assert.rejects(unauthorised.models.list(), (e) => e instanceof OpenAI.AuthenticationError);

console.log("openai client: all checks passed");
