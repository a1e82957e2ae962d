// One Vercel AI SDK call against the proxy; prints what the SDK shows as one JSON line.
//   node aisdk.mjs '{"provider":"chat|anthropic|responses","base":"http://127.0.0.1:PORT","mode":"generate|stream","tools":false}'
// ("model" picks the model name, "demo" by default; "store": false sets the Responses provider's store option;
// "reasoning" is the call's top-level reasoning option: "none", "minimal" … "xhigh"; "providerOptions" is the
// call's provider options, as given.)
// With "tools": true the model gets a get_weather tool that the SDK executes, and a second step sends the
// result back (the replayed turn). Output: {text, reasoningText, steps: [{text, reasoningText, toolCalls}], parts}
// where parts lists the stream part types (stream mode) with the reasoning deltas' text.
import { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";

globalThis.AI_SDK_LOG_WARNINGS = false;
const args = JSON.parse(process.argv[2]);
const name = args.model ?? "demo";
const model = {
  chat: () => createOpenAICompatible({ name: "gateway", baseURL: `${args.base}/v1`, apiKey: "unused" }).chatModel(name),
  anthropic: () => createAnthropic({ baseURL: `${args.base}/v1`, apiKey: "unused" })(name),
  responses: () => createOpenAI({ baseURL: `${args.base}/v1`, apiKey: "unused" }).responses(name),
}[args.provider]();

const tools = args.tools
  ? {
      get_weather: tool({
        description: "The weather in a city.",
        inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
        execute: async () => "sunny",
      }),
    }
  : undefined;
const options = {
  model,
  prompt: args.tools ? "What is the weather in Paris?" : "What is 2+2?",
  tools,
  stopWhen: stepCountIs(args.tools ? 2 : 1),
  maxRetries: 0,
  maxOutputTokens: 512,
  providerOptions: args.providerOptions ?? (args.store === false ? { openai: { store: false } } : undefined),
  ...(args.reasoning ? { reasoning: args.reasoning } : {}),
};

const steps = (list) =>
  list.map((s) => ({
    text: s.text,
    reasoningText: s.reasoningText ?? null,
    toolCalls: s.toolCalls.map((c) => ({ toolName: c.toolName, input: c.input })),
  }));

let out;
if (args.mode === "generate") {
  const r = await generateText(options);
  out = { text: r.text, reasoningText: r.reasoningText ?? null, steps: steps(r.steps), parts: null };
} else {
  const r = streamText({ ...options, onError: ({ error }) => { throw error; } });
  const parts = [];
  for await (const part of r.fullStream) {
    if (part.type === "reasoning-delta") parts.push(["reasoning-delta", part.text]);
    else if (part.type === "error") throw part.error;
    else if (["reasoning-start", "reasoning-end", "text-start", "text-end", "tool-call", "finish-step"].includes(part.type))
      parts.push([part.type]);
  }
  out = { text: await r.text, reasoningText: (await r.reasoningText) ?? null, steps: steps(await r.steps), parts };
}
process.stdout.write(JSON.stringify(out) + "\n");
