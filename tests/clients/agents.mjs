// One run of the OpenAI Agents SDK for JavaScript (@openai/agents) on its chat completions model
// (OpenAIChatCompletionsModel) against the proxy; prints what the SDK shows as one JSON line.
//   node agents.mjs '{"base":"http://127.0.0.1:PORT","model":"demo","stream":false,"tools":false}'
// With "tools": true the agent has a get_weather tool (it answers "sunny") and up to three turns, so the
// turn that calls it is sent back with the tool's result.
// Output: {output, reasoning: [the text of each reasoning item], items: [the type of each new item],
// deltas: [the text of each reasoning delta event] (stream only)}.
import OpenAI from "openai";
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from "@openai/agents";

setTracingDisabled(true);
const args = JSON.parse(process.argv[2]);
const client = new OpenAI({ baseURL: `${args.base}/v1`, apiKey: "unused", maxRetries: 0 });
const getWeather = tool({
  name: "get_weather",
  description: "The weather in a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
  strict: true,
  execute: async () => "sunny",
});
const agent = new Agent({
  name: "assistant",
  instructions: "Answer briefly.",
  model: new OpenAIChatCompletionsModel(client, args.model ?? "demo"),
  tools: args.tools ? [getWeather] : [],
});
const question = args.tools ? "What is the weather in Paris?" : "What is 2+2?";
const maxTurns = args.tools ? 3 : 1;

const reasoningOf = (item) => (item.rawItem.rawContent ?? []).map((part) => part.text).join("");
let result;
const deltas = [];
if (args.stream) {
  result = await run(agent, question, { stream: true, maxTurns });
  for await (const event of result) {
    // The reasoning as streamed: the SDK's own output_item events carry each reasoning item whole.
    if (event.type === "run_item_stream_event" && event.item.type === "reasoning_item") deltas.push(reasoningOf(event.item));
  }
  await result.completed;
} else {
  result = await run(agent, question, { maxTurns });
}
const out = {
  output: result.finalOutput ?? null,
  reasoning: result.newItems.filter((i) => i.type === "reasoning_item").map(reasoningOf),
  items: result.newItems.map((i) => i.type),
  deltas: args.stream ? deltas : null,
};
process.stdout.write(JSON.stringify(out) + "\n");
