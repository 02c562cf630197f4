// The official `openai` npm client against `switchyard serve`: a chat completion, the same
// streamed, a legacy completion, the model list, and an error surfaced as the client's own
// error class. usage: node openai_client_test.mjs PORT API_KEY
import OpenAI from "openai";

const [port, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0 });
let failures = 0;
const check = (cond, what) => {
  if (!cond) {
    failures++;
    console.error("FAIL:", what);
  }
};

const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === "tiny", `models: ${JSON.stringify(models.data)}`);

const request = {
  model: "tiny",
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Say hello." },
  ],
  max_tokens: 12,
  temperature: 0,
  ignore_eos: true,
};
const reply = await client.chat.completions.create(request);
const message = reply.choices[0].message;
check(reply.object === "chat.completion" && message.role === "assistant", `chat: ${JSON.stringify(reply)}`);
check(reply.usage.completion_tokens === 12, `usage: ${JSON.stringify(reply.usage)}`);

const stream = await client.chat.completions.create({ ...request, stream: true });
let streamed = "";
let finish = null;
for await (const chunk of stream) {
  const choice = chunk.choices[0];
  if (!choice) continue;
  streamed += (choice.delta.reasoning_content ?? "") + (choice.delta.content ?? "");
  finish = choice.finish_reason ?? finish;
}
const whole = (message.reasoning_content ?? "") + (message.content ?? "");
check(streamed === whole, `streamed ${JSON.stringify(streamed)} vs ${JSON.stringify(whole)}`);
check(finish === "length", `finish ${finish}`);

const completion = await client.completions.create({
  model: "tiny", prompt: "Once upon a time", max_tokens: 5, temperature: 0,
});
check(completion.choices[0].text.length > 0 && completion.usage.completion_tokens <= 5,
  `completion: ${JSON.stringify(completion)}`);

try {
  await client.chat.completions.create({ ...request, max_tokens: -3 });
  check(false, "max_tokens -3 accepted");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === "max_tokens",
    `error class ${e.constructor.name}, param ${e.param}`);
}

if (failures) process.exit(1);
console.log("openai client: all checks passed");
