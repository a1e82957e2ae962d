"""One answer per model family, written as that family's model writes it, and what a client must see.

The expected reasoning and content follow the family's own server parser (vLLM, SGLang) for the
same text, with the gateway's documented rules on top (whitespace right after a tag trimmed, by
``trim_tag_edges``; other whitespace kept unless the preset trims it).
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    id: str
    model: str
    text: str
    reasoning: str
    content: str


DS_CALL = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
    '```json\n{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)
QWEN_CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'
GLM_CALL = "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a.txt</arg_value>\n</tool_call>"
KIMI_CALL = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>"
    '{"path": "a.txt"}<|tool_call_end|><|tool_calls_section_end|>'
)
HARMONY_CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Paris"}<|call|>'
)

CASES: list[Case] = [
    # gpt-oss harmony: every header and terminator variant the servers' parsers accept.
    Case(
        "gpt-oss",
        "openai/gpt-oss-120b",
        "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>2 + 2 = **4**.<|return|>",
        "User asks 2+2. Easy.",
        "2 + 2 = **4**.",
    ),
    Case(
        "gpt-oss-constrain",
        "gpt-oss-20b",
        "<|channel|>analysis<|message|>Need JSON.<|end|>"
        '<|start|>assistant<|channel|>final <|constrain|>json<|message|>{"sum": 4}<|return|>',
        "Need JSON.",
        '{"sum": 4}',
    ),
    Case(
        "gpt-oss-no-start",
        "gpt-oss:20b",
        "<|channel|>analysis<|message|>Think.<|end|><|channel|>final<|message|>Answer.",
        "Think.",
        "Answer.",
    ),
    Case(
        "gpt-oss-no-end",
        "GPT-OSS-120B",
        "<|channel|>analysis<|message|>Think.<|start|>assistant<|channel|>final<|message|>Answer.<|end|>",
        "Think.",
        "Answer.",
    ),
    Case(
        "gpt-oss-tool-call",
        "openai/gpt-oss-120b",
        "<|channel|>analysis<|message|>Need the weather tool.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Checking the forecast.<|end|>" + HARMONY_CALL,
        "Need the weather tool.",
        "Checking the forecast.\n" + HARMONY_CALL,
    ),
    # Injected open tags: the template opens <think>, the model writes only the close.
    Case(
        "deepseek-r1",
        "deepseek-ai/DeepSeek-R1",
        "The user wants 2+2.\n</think>\n\nIt is 4.",
        "The user wants 2+2.\n",  # the reasoning's own trailing newline stays: trim_reasoning_tail is off
        "It is 4.",
    ),
    Case(
        "deepseek-r1-0528-explicit-tag",
        "deepseek-ai/DeepSeek-R1-0528",
        "\n<think>Sum it.</think>It is 4.",
        "Sum it.",
        "It is 4.",
    ),
    Case(
        "deepseek-r1-distill-tool-call",
        "DeepSeek-R1-Distill-Qwen-32B",
        "I need the weather." + DS_CALL,
        "I need the weather.",
        DS_CALL,
    ),
    Case("qwq", "Qwen/QwQ-32B", "Add them.</think>4", "Add them.", "4"),
    Case(
        "qwen3-thinking-2507",
        "Qwen/Qwen3-235B-A22B-Thinking-2507-FP8",
        "I should read the file.\n" + QWEN_CALL,
        "I should read the file.\n",
        QWEN_CALL,
    ),
    # Hybrid Qwen3: writes <think> itself; a tool call ends an unclosed block.
    Case(
        "qwen3-hybrid",
        "Qwen/Qwen3-32B",
        "<think>I need to read the file" + QWEN_CALL,
        "I need to read the file",
        QWEN_CALL,
    ),
    Case("qwen3-hybrid-no-thinking", "qwen3:8b", "Just the answer.", "", "Just the answer."),
    Case("qwen3-instruct-2507", "Qwen/Qwen3-30B-A3B-Instruct-2507", "Just the answer.", "", "Just the answer."),
    Case("glm-4.6", "zai-org/GLM-4.6", "<think>Look it up." + GLM_CALL, "Look it up.", GLM_CALL),
    Case("kimi-k2", "moonshotai/Kimi-K2-Thinking", "<think>Read it." + KIMI_CALL, "Read it.", KIMI_CALL),
    Case("kimi-k2-instruct", "moonshotai/Kimi-K2-Instruct", "<think>Read it." + KIMI_CALL, "Read it.", KIMI_CALL),
    # Answer wrappers, stripped for their families only.
    Case(
        "hunyuan",
        "tencent/Hunyuan-A13B-Instruct",
        "<think>\nAdd 2 and 2.\n</think>\n<answer>\nIt is 4.\n</answer>",
        "Add 2 and 2.",
        "It is 4.",
    ),
    Case(
        "hunyuan-tool-call",
        "tencent/Hunyuan-A13B-Instruct",
        '<think>\nUse the tool.\n<tool_calls>[{"name": "f", "arguments": {}}]</tool_calls>',
        "Use the tool.",
        '<tool_calls>[{"name": "f", "arguments": {}}]</tool_calls>',
    ),
    Case(
        "ernie-4.5-thinking",
        "baidu/ERNIE-4.5-21B-A3B-Thinking",
        "Add them.\n</think>\n\n<response>\nIt is 4.\n</response>\n",
        "Add them.",
        "It is 4.",
    ),
    Case(
        "granite-3.2",
        "ibm-granite/granite-3.2-8b-instruct",
        "Here is my thought process: 2 and 2 make 4. Here is my response: It is 4.",
        "2 and 2 make 4.",
        "It is 4.",
    ),
    Case(
        "granite-3.3",
        "ibm-granite/granite-3.3-8b-instruct",
        "<think>2 and 2 make 4.</think><response>It is 4.</response>",
        "2 and 2 make 4.",
        "It is 4.",
    ),
    Case(
        "command-r7b",
        "CohereLabs/c4ai-command-r7b-12-2024",
        "<|START_THINKING|>Add them.<|END_THINKING|><|START_RESPONSE|>It is 4.<|END_RESPONSE|>",
        "Add them.",
        "It is 4.",
    ),
    Case(
        "seed-oss",
        "ByteDance-Seed/Seed-OSS-36B-Instruct",
        "<seed:think>Add them.</seed:think>It is 4.",
        "Add them.",
        "It is 4.",
    ),
    Case("gemma-4", "google/gemma-4-27b-it", "<|channel>thought\nAdd them.<channel|>It is 4.", "Add them.", "It is 4."),
    Case("gemma-4-bare-channel", "gemma-4-e4b-it", "<|channel>Add them.<channel|>It is 4.", "Add them.", "It is 4."),
    Case("minimax-m2", "MiniMaxAI/MiniMax-M2", "Add them.</think>\n\nIt is 4.", "Add them.", "It is 4."),
    Case("minimax-m3", "MiniMax-M3", "<mm:think>Add them.</mm:think>It is 4.", "Add them.", "It is 4."),
    Case("step3", "stepfun-ai/step3", "Add them.</think>It is 4.", "Add them.", "It is 4."),
    Case(
        "magistral-tool-call",
        "mistralai/Magistral-Small-2509",
        '[THINK]Call it.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
        "Call it.",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
    ),
    Case("olmo-3-think", "allenai/Olmo-3-7B-Think", "Add them.</think>It is 4.", "Add them.", "It is 4."),
    Case(
        "nemotron",
        "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        "<think>Call it." + QWEN_CALL,
        "Call it.",
        QWEN_CALL,
    ),
    Case(
        "nemotron-3",
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B",
        "<think>Call it." + QWEN_CALL,
        "Call it.",
        QWEN_CALL,
    ),
    Case("hermes-4", "NousResearch/Hermes-4-14B", "<think>Call it." + QWEN_CALL, "Call it.", QWEN_CALL),
    Case("qwq-preview", "Qwen/QwQ-32B-Preview", "Let me think step by step. 4.", "", "Let me think step by step. 4."),
    Case(
        "apertus",
        "swiss-ai/Apertus-8B-Instruct-2509",
        "<|inner_prefix|>Add them.<|inner_suffix|>It is 4.",
        "Add them.",
        "It is 4.",
    ),
    Case("deepseek-v3.1-hybrid", "deepseek-ai/DeepSeek-V3.1", "Paris." + DS_CALL, "", "Paris." + DS_CALL),
    Case(
        "deepseek-v3.2-hybrid",
        "deepseek-ai/DeepSeek-V3.2",
        "<think>Look it up." + DS_CALL,
        "Look it up.",
        DS_CALL,
    ),
]

# Plain models: the other families' markers are text; the default tags still work.
NEGATIVE: list[Case] = [
    Case("plain-answer-wrapper", "llama-3.1-8b-instruct", "<answer>It is 4.</answer>", "", "<answer>It is 4.</answer>"),
    Case(
        "plain-tool-call-in-reasoning",
        "meta-llama/Llama-3.3-70B-Instruct",
        "<think>I need to read the file" + QWEN_CALL,
        "I need to read the file" + QWEN_CALL,
        "",
    ),
    Case(
        "plain-harmony-looking",
        "mistral-small",
        "Send <|channel|>final<|message|>hi<|return|> to it.",
        "",
        "Send <|channel|>final<|message|>hi<|return|> to it.",
    ),
    Case("plain-seed-think", "llama3", "<seed:think>x</seed:think>y", "", "<seed:think>x</seed:think>y"),
    Case("plain-no-injection", "llama3", "Add them.</think>It is 4.", "", "Add them.</think>It is 4."),
    Case("granite-3.3-answer-tag", "granite-3.3-8b-instruct", "<answer>x</answer>", "", "<answer>x</answer>"),
    Case("hunyuan-response-tag", "hunyuan-a13b", "<response>x</response>", "", "<response>x</response>"),
]
