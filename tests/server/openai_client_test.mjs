// The official `openai` npm client against `switchyard serve`: a chat completion, the same
// streamed, a legacy completion, the model list, a tool call (whole and streamed, and its
// answer sent back), and an error surfaced as the client's own error class. usage: node openai_client_test.mjs PORT API_KEY
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

// A tool call, forced (a random model never writes the markup by itself), whole and streamed:
// the client's own types carry it, and its streaming helper puts the deltas together.
const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather of a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string", enum: ["Paris", "Tokyo"] }, celsius: { type: "boolean" } },
      required: ["city", "celsius"],
    },
  },
}];
const toolRequest = {
  model: "tiny",
  messages: [{ role: "user", content: "Weather in Paris?" }],
  tools,
  tool_choice: { type: "function", function: { name: "get_weather" } },
  parallel_tool_calls: false,
  max_tokens: 400,
  seed: 5,
};
const called = await client.chat.completions.create(toolRequest);
const calls = called.choices[0].message.tool_calls ?? [];
check(called.choices[0].finish_reason === "tool_calls" && calls.length === 1,
  `tool call: ${JSON.stringify(called.choices[0])}`);
const args = calls.length ? JSON.parse(calls[0].function.arguments) : {};
check(calls[0]?.function.name === "get_weather" && ["Paris", "Tokyo"].includes(args.city) &&
  typeof args.celsius === "boolean", `tool call arguments: ${JSON.stringify(calls[0])}`);

const runner = client.beta.chat.completions.stream({ ...toolRequest, seed: 6 });
const final = await runner.finalChatCompletion();
const streamedCalls = final.choices[0].message.tool_calls ?? [];
check(final.choices[0].finish_reason === "tool_calls" && streamedCalls.length === 1 &&
  streamedCalls[0].function.name === "get_weather", `streamed tool call: ${JSON.stringify(final.choices[0])}`);
const streamedArgs = JSON.parse(streamedCalls[0]?.function.arguments ?? "null");
check(streamedArgs && ["Paris", "Tokyo"].includes(streamedArgs.city), `streamed arguments: ${JSON.stringify(streamedArgs)}`);

// The tool's answer goes back in the conversation as the client writes it.
const followUp = await client.chat.completions.create({
  model: "tiny",
  messages: [...toolRequest.messages, called.choices[0].message,
    { role: "tool", tool_call_id: calls[0]?.id ?? "x", content: "18 C, sunny" }],
  tools,
  max_tokens: 4,
  ignore_eos: true,
});
check(followUp.choices[0].message.role === "assistant", `follow-up: ${JSON.stringify(followUp)}`);

try {
  await client.chat.completions.create({ ...request, max_tokens: -3 });
  check(false, "max_tokens -3 accepted");
} catch (e) {
  check(e instanceof OpenAI.BadRequestError && e.param === "max_tokens",
    `error class ${e.constructor.name}, param ${e.param}`);
}

if (failures) process.exit(1);
console.log("openai client: all checks passed");
