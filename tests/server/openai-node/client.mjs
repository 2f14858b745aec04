// specd serve through the official openai client: models, completions and chat, whole and
// streamed, structured output (JSON Schema, JSON mode, GBNF), and refused requests as the
// client's APIError. Environment: SPECD_BASE_URL,
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

// Structured output under speculation: the schema's grammar masks every verified row, so
// the output parses, matches, and equals the output with speculation off.
const schema = {
  type: "object",
  properties: { answer: { enum: ["yes", "no"] }, confidence: { type: "integer" } },
  required: ["answer", "confidence"],
};
const structured = { model, messages, max_tokens: 96, temperature: 0,
  response_format: { type: "json_schema", json_schema: { name: "verdict", strict: true, schema } } };
const verdict = await client.chat.completions.create(structured);
assert.equal(verdict.choices[0].finish_reason, "stop");
const parsed = JSON.parse(verdict.choices[0].message.content);
assert.ok(["yes", "no"].includes(parsed.answer), verdict.choices[0].message.content);
assert.equal(Number.isInteger(parsed.confidence), true);
const plainVerdict = await client.chat.completions.create({ ...structured, speculative: { proposer: "none" } });
assert.equal(plainVerdict.choices[0].message.content, verdict.choices[0].message.content);
let verdictStreamed = "";
for await (const chunk of await client.chat.completions.create({ ...structured, stream: true }))
  verdictStreamed += chunk.choices[0]?.delta?.content ?? "";
assert.equal(verdictStreamed, verdict.choices[0].message.content);
const jsonMode = await client.completions.create({ model, prompt: PROMPT, max_tokens: 48, temperature: 0,
  response_format: { type: "json_object" } });
assert.equal(jsonMode.choices[0].text.startsWith("{"), true);
const gbnf = await client.completions.create({ model, prompt: PROMPT, max_tokens: 8, temperature: 0.8, seed: 3,
  grammar: 'root ::= " "? ("red" | "green" | "blue")' });
assert.match(gbnf.choices[0].text, /^ ?(red|green|blue)$/);
try {
  await client.chat.completions.create({ ...structured,
    response_format: { type: "json_schema", json_schema: { name: "v", schema: { type: "string", pattern: "a+" } } } });
  assert.fail("a schema with pattern was accepted");
} catch (e) {
  assert.ok(e instanceof OpenAI.APIError, String(e));
  assert.equal(e.status, 400);
  assert.equal(e.param, "response_format.json_schema.schema");
}

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
