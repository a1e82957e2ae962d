// The Vercel AI SDK's reasoning extraction on given chunks, driven by bench/vercel.py.
//
//   node bench/vercel.mjs AI_MODULE CHUNKS_JSON
//
// AI_MODULE: the path of the `ai` package's entry module; CHUNKS_JSON: a file holding
// {"corpus name": ["chunk", ...], ...}. Reads one JSON command a line on stdin and answers each with
// one JSON line on stdout:
//
//   {"op": "version"}                                 -> {"node": "v20...", "ai": "7.0.173"}
//   {"op": "split", "variant": V, "corpus": C}        -> {"blocks": [["reasoning", "..."], ["content", "..."], ...]}
//   {"op": "time", "variant": V, "corpus": C}         -> {"cpu": seconds, "wall": seconds, "parts": n}
//
// Variants:
//   "vercel":      the chunks as text-delta parts from a ReadableStream, through
//                  extractReasoningMiddleware({ tagName: 'think' }).wrapStream, read to the end;
//   "direct":      the same middleware's transform function called on each part in a plain loop;
//   "passthrough": the same source through a TransformStream that only enqueues what it gets (the
//                  least any TransformStream-based middleware costs);
//   "source":      the source read directly, with no TransformStream (what the provider's stream and
//                  its reader cost anyway, the middleware or not).

import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [aiModule, chunksFile] = process.argv.slice(2);
const ai = await import(pathToFileURL(aiModule).href);
const corpora = JSON.parse(readFileSync(chunksFile, 'utf8'));
// The provider's parts, built once: what a provider hands the middleware, not part of its cost.
const parts = {};
for (const [name, chunks] of Object.entries(corpora)) {
  parts[name] = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: '0' },
    ...chunks.map(delta => ({ type: 'text-delta', id: '0', delta })),
    { type: 'text-end', id: '0' },
    { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: {} },
  ];
}

// One part per pull, as a provider's stream hands them on. (Enqueueing all of them at once would
// measure Node's stream queue instead: with 250,000 parts queued, a pass-through took 30 times as
// long, the queue's dequeue growing with its length.)
function source(name) {
  const list = name === null ? [] : parts[name];
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i < list.length) controller.enqueue(list[i++]);
      else controller.close();
    },
  });
}

async function vercelStream(name) {
  const middleware = ai.extractReasoningMiddleware({ tagName: 'think' });
  const { stream } = await middleware.wrapStream({
    doStream: async () => ({ stream: source(name) }),
    doGenerate: async () => {
      throw new Error('not used');
    },
    params: { prompt: [] },
    model: { specificationVersion: 'v4', provider: 'bench', modelId: 'bench' },
  });
  return stream;
}

// The middleware's own transformer, taken from the TransformStream its wrapStream builds, to call
// its transform function directly in a loop: the extraction logic without the stream machinery.
async function vercelTransformer() {
  const Original = globalThis.TransformStream;
  let transformer = null;
  globalThis.TransformStream = class extends Original {
    constructor(t, ...rest) {
      super(t, ...rest);
      transformer ??= t;
    }
  };
  try {
    await vercelStream(null);
  } finally {
    globalThis.TransformStream = Original;
  }
  if (typeof transformer?.transform !== 'function') throw new Error('no transformer captured');
  return transformer;
}

function runDirect(transformer, list, enqueue) {
  const controller = { enqueue, error: e => { throw e; }, terminate() {} };
  for (const part of list) transformer.transform(part, controller);
  transformer.flush?.(controller);
}

function passthroughStream(name) {
  return source(name).pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        controller.enqueue(chunk);
      },
    }),
  );
}

async function drain(stream) {
  const reader = stream.getReader();
  let n = 0;
  for (;;) {
    const { done } = await reader.read();
    if (done) return n;
    n++;
  }
}

let sink = null;

async function time(variant, name) {
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  let n = 0;
  if (variant === 'direct') {
    runDirect(await vercelTransformer(), parts[name], part => {
      sink = part; // kept, so that the parts it builds are not optimised away
      n++;
    });
  } else {
    const streams = { vercel: () => vercelStream(name), passthrough: () => passthroughStream(name), source: () => source(name) };
    n = await drain(await streams[variant]());
  }
  const wall = (performance.now() - wall0) / 1e3;
  const cpu = process.cpuUsage(cpu0);
  sink = null;
  return { cpu: (cpu.user + cpu.system) / 1e6, wall, parts: n };
}

// The split as blocks, as the SDK emits them: each reasoning-start..reasoning-end is one reasoning
// block, the text deltas between two of them one content block (separators included). "vercel":
// read from wrapStream's stream; "direct": from its transform function called directly.
async function split(variant, name) {
  const out = [];
  if (variant === 'direct') {
    runDirect(await vercelTransformer(), parts[name], part => out.push(part));
  } else {
    const reader = (await vercelStream(name)).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      out.push(value);
    }
  }
  const blocks = [];
  let current = null;
  for (const part of out) {
    if (part.type === 'reasoning-start' || part.type === 'reasoning-end') {
      current = null;
      continue;
    }
    const kind = { 'reasoning-delta': 'reasoning', 'text-delta': 'content' }[part.type];
    if (kind === undefined) continue;
    if (current === null || current[0] !== kind) {
      current = [kind, ''];
      blocks.push(current);
    }
    current[1] += part.delta;
  }
  return blocks;
}

const versionOf = JSON.parse(
  readFileSync(new URL('../package.json', pathToFileURL(aiModule)), 'utf8'),
).version;

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const command = JSON.parse(line);
  let answer;
  if (command.op === 'version') answer = { node: process.version, ai: versionOf };
  else if (command.op === 'split') answer = { blocks: await split(command.variant, command.corpus) };
  else if (command.op === 'time') answer = await time(command.variant, command.corpus);
  else answer = { error: `unknown op ${command.op}` };
  process.stdout.write(JSON.stringify(answer) + '\n');
}
