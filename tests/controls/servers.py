"""Emulated vLLM, SGLang, llama.cpp's llama-server and Ollama: how each reads a request's reasoning
controls on each endpoint it has, and what the model's chat template then sees.

A plain model of their request handling, read from their sources (the file is named at each rule):
which field is read, which values are refused with 400, what is ignored, the server's defaults.
Each emulator is an aiohttp app that answers a small valid non-stream response and logs, per
request, the :class:`TemplateView` of the model it was sent to (or answers 400 as the server does).

What the template sees, per family (the variable its chat template reads):

* ``qwen3`` (Qwen3 hybrid) and ``glm-4.6``: ``enable_thinking``, on unless it is ``false``.
* ``deepseek-v3.1``: ``thinking``, off unless it is true (llama.cpp's copy of the template falls back
  to ``enable_thinking``; Ollama's renderer reads ``think``).
* ``gpt-oss``: the harmony system message ``Reasoning: low|medium|high`` (``medium`` when unset); it
  cannot be turned off.
* ``deepseek-r1``: always thinks (the template opens ``<think>``); only a server budget stops it.
* ``none`` (a non-thinking model such as Qwen3-*-Instruct-2507): never thinks.

``budget`` is the reasoning-token budget the server enforces on the generation (vLLM
``thinking_token_budget``, llama.cpp ``thinking_budget_tokens``), ``None`` where none is enforced.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

Family = Literal["qwen3", "deepseek-v3.1", "glm-4.6", "gpt-oss", "deepseek-r1", "none"]
Server = Literal["vllm", "sglang", "llamacpp", "ollama"]

EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
HARMONY = ("low", "medium", "high")


@dataclass(frozen=True)
class TemplateView:
    """What the model's chat template sees of the request's reasoning controls."""

    thinking: bool
    effort: str | None = None
    budget: int | None = None


@dataclass(frozen=True)
class Model:
    name: str
    family: Family

    @property
    def can_think(self) -> bool:
        """Ollama's ``thinking`` capability (``/api/show``)."""
        return self.family != "none"


class Refused(Exception):
    """The server answers 400 with this message."""


# -- the templates ------------------------------------------------------------------------------


def template(
    family: Family, kwargs: dict[str, Any], budget: int | None = None, *, fallback: bool = False
) -> TemplateView:
    """What a Jinja chat template of ``family`` renders from ``kwargs`` (the chat template's variables).

    ``fallback``: the template copy reads ``enable_thinking`` where ``thinking`` is not given
    (llama.cpp models/templates/deepseek-ai-DeepSeek-V3.1.jinja)."""
    if family in ("qwen3", "glm-4.6"):
        # Qwen3: `enable_thinking is defined and enable_thinking is false` -> empty think block;
        # GLM-4.6 (llama.cpp models/templates/GLM-4.6.jinja): `not enable_thinking` -> /nothink.
        return TemplateView(kwargs.get("enable_thinking", True) is not False, None, budget)
    if family == "deepseek-v3.1":
        # deepseek-ai-DeepSeek-V3.1.jinja: `thinking is defined and thinking` -> <think>, else </think>
        on = kwargs["thinking"] if "thinking" in kwargs else kwargs.get("enable_thinking", False) if fallback else False
        return TemplateView(bool(on), None, budget)
    if family == "gpt-oss":
        # openai/harmony: the system message carries `Reasoning: {effort}`, medium when unset
        return TemplateView(True, kwargs.get("reasoning_effort") or "medium", budget)
    if family == "deepseek-r1":
        return TemplateView(True, None, budget)  # the template prefills <think>; no variable
    return TemplateView(False)


def ollama_renderer(family: Family, think: bool | str | None) -> TemplateView:
    """What Ollama's renderer for ``family`` renders from the request's resolved ``think``
    (model/renderers/*.go; server/routes.go)."""
    if family == "gpt-oss":
        # harmony reads the level only; a bool leaves the default (docs/capabilities/thinking.mdx)
        return TemplateView(True, think if isinstance(think, str) else "medium")
    if family == "deepseek-r1":
        return TemplateView(True)
    if family == "none":
        return TemplateView(False)
    return TemplateView(think is not None and think is not False)  # a level means thinking on (api/types.go Bool)


# -- reading a request ----------------------------------------------------------------------------


def _object(body: dict[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused(f"{key}: Input should be a valid dictionary")
    return value


def _int_or_none(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(f"{name}: Input should be a valid integer")
    return value


def vllm(model: Model, surface: str, body: dict[str, Any]) -> TemplateView:
    """vLLM: pydantic models; a Literal violation is a 400, unknown fields are ignored
    (vllm/entrypoints/openai/engine/protocol.py OpenAIBaseModel)."""
    if surface == "responses":
        # vllm/entrypoints/openai/responses/protocol.py: `reasoning: Reasoning` (the openai SDK type:
        # effort none…xhigh); build_chat_params passes only `reasoning_effort` to the template: no
        # chat_template_kwargs, no thinking_token_budget on this request type.
        reasoning = _object(body, "reasoning")
        effort = reasoning.get("effort")
        if effort is not None and effort not in EFFORTS[:-1]:
            raise Refused("reasoning.effort: Input should be 'none', 'minimal', 'low', 'medium', 'high' or 'xhigh'")
        return _vllm_render(model, {} if effort is None else {"reasoning_effort": effort}, None)
    if surface == "messages":
        # vllm/entrypoints/anthropic/protocol.py: AnthropicMessagesRequest has no `thinking` field (ignored);
        # serving.py _handle_output_config: output_config.effort -> reasoning_effort; it accepts the
        # vLLM-only chat_template_kwargs; no thinking_token_budget.
        effort = _object(body, "output_config").get("effort")
        if effort is not None and effort not in ("low", "medium", "high", "xhigh", "max"):
            raise Refused("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
        return _vllm_chat(model, _object(body, "chat_template_kwargs"), effort, None)
    # vllm/entrypoints/openai/chat_completion/protocol.py ChatCompletionRequest
    effort = body.get("reasoning_effort")
    if effort is not None and (not isinstance(effort, str) or effort not in EFFORTS):
        raise Refused("reasoning_effort: Input should be 'none', 'minimal', 'low', 'medium', 'high', 'xhigh' or 'max'")
    budget = _int_or_none(body.get("thinking_token_budget"), "thinking_token_budget")
    return _vllm_chat(model, _object(body, "chat_template_kwargs"), effort, budget)


def _vllm_chat(model: Model, ctk: dict[str, Any], effort: str | None, budget: int | None) -> TemplateView:
    # build_chat_params: `reasoning_effort` is a template kwarg, and when set without the client's own
    # `enable_thinking`, enable_thinking = (effort != "none") -- only that key, not `thinking`.
    kwargs = dict(ctk)
    if effort is not None:
        kwargs["reasoning_effort"] = effort
        kwargs.setdefault("enable_thinking", effort != "none")
    return _vllm_render(model, kwargs, budget)


def _vllm_render(model: Model, kwargs: dict[str, Any], budget: int | None) -> TemplateView:
    if model.family == "gpt-oss":
        # vllm/entrypoints/openai/parser/harmony_utils.py: REASONING_EFFORT has high/medium/low only;
        # another value is a KeyError building the system message (an error answer, not a render).
        effort = kwargs.get("reasoning_effort")
        if effort is not None and effort not in HARMONY:
            raise Refused(f"harmony reasoning effort {effort!r} is not supported")
    return template(model.family, kwargs, budget)


def sglang(model: Model, surface: str, body: dict[str, Any]) -> TemplateView:
    """SGLang: plain pydantic models (unknown fields ignored)."""
    if surface == "messages":
        # python/sglang/srt/entrypoints/anthropic/request_conversion.py: a new chat request of the
        # Anthropic fields only (the client's chat_template_kwargs do not reach it); thinking.type !=
        # "disabled" -> reasoning on (adaptive too); budget_tokens accepted, "not enforced" (a warning);
        # output_config.effort -> reasoning_effort (xhigh -> max), set after validation, so it does not
        # derive the switch.
        thinking = _object(body, "thinking")
        kwargs: dict[str, Any] = {}
        if thinking:
            if thinking.get("type") not in ("enabled", "disabled", "adaptive"):
                raise Refused("thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'")
            enabled = thinking["type"] != "disabled"
            kwargs = {"thinking": enabled, "enable_thinking": enabled}
        effort = _object(body, "output_config").get("effort")
        if effort is not None:
            if effort not in ("low", "medium", "high", "xhigh", "max"):
                raise Refused("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
            kwargs["reasoning_effort"] = "max" if effort == "xhigh" else effort
        return template(model.family, kwargs)  # then as a chat request: gpt-oss's template reads the effort
    if surface != "chat":
        raise web.HTTPNotFound()
    # python/sglang/srt/entrypoints/openai/protocol.py: reasoning_effort is a Literal none…max or a float
    # 0.0-0.99 (an SGLang extension); a boolean is refused (validate_reasoning_effort_type).
    # normalize_reasoning_inputs: reasoning.effort copied to reasoning_effort; reasoning.enabled truthy
    # -> on; any effort != none -> setdefault thinking and enable_thinking True, none -> both False.
    ctk = dict(_object(body, "chat_template_kwargs"))
    effort = body.get("reasoning_effort")
    thinking = None
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict):
        inner = reasoning.get("effort", reasoning.get("reasoning_effort"))
        if inner is not None:
            effort = inner
        enabled = reasoning.get("enabled", reasoning.get("enable", False))
        if isinstance(enabled, str):
            enabled = enabled.strip().lower() in {"1", "true", "yes", "y", "on"}
        if enabled:
            thinking = True
    if effort is not None:
        effort = _sglang_effort(effort)
        thinking = effort != "none"
    if thinking is not None:
        ctk.setdefault("thinking", thinking)
        ctk.setdefault("enable_thinking", thinking)
    # serving_chat.py _convert_to_internal_request: a chat_template_kwargs reasoning_effort becomes the
    # request's (refused as "none" for gpt-oss); _apply_jinja_template hands the template
    # `reasoning_effort` -- gpt-oss's Jinja template reads it -- under the request's kwargs.
    own = ctk.pop("reasoning_effort", None)
    if model.family == "gpt-oss" and own == "none":
        raise Refused("Harmony does not support reasoning effort none")
    effort = own if own is not None else effort
    return template(model.family, ctk if effort is None else {"reasoning_effort": effort, **ctk})


def _sglang_effort(effort: Any) -> str | float:
    if isinstance(effort, bool):
        raise Refused("reasoning_effort must not be a boolean")
    if isinstance(effort, str) and effort in EFFORTS:
        return effort
    try:
        value = float(effort)
    except (TypeError, ValueError):
        raise Refused(f"invalid reasoning effort: {effort!r}") from None
    if not 0.0 <= value <= 0.99:
        raise Refused("reasoning_effort must be between 0.0 and 0.99")
    return value


def llamacpp(model: Model, surface: str, body: dict[str, Any], *, legacy: bool = False) -> TemplateView:
    """llama-server (`--jinja`, reasoning on by default for a template that supports it). ``legacy``: a
    build from before the request's reasoning_effort was read (tools/server/server-common.cpp
    @006639c3: only chat_template_kwargs; its Anthropic conversion drops them too, its Responses
    conversion leaves `reasoning` unread)."""
    if surface == "messages" and legacy:
        chat: dict[str, Any] = {"messages": body.get("messages", [])}
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens", 10000)
            chat["thinking_budget_tokens"] = budget if isinstance(budget, int) else 10000
        body = chat
    elif surface == "messages":
        # tools/server/server-chat.cpp server_chat_convert_anthropic_to_oai: a new chat body of
        # messages, tools, stop, max_tokens, temperature/top_p/top_k/stream and chat_template_kwargs;
        # thinking.type == "enabled" -> thinking_budget_tokens = budget_tokens (default 10000);
        # "disabled" maps to nothing; output_config and a top-level reasoning_effort are dropped.
        chat = {"messages": body.get("messages", [])}
        if "chat_template_kwargs" in body:
            chat["chat_template_kwargs"] = body["chat_template_kwargs"]
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens", 10000)
            chat["thinking_budget_tokens"] = budget if isinstance(budget, int) else 10000
        body = chat
    elif surface == "responses" and not legacy:
        # server-chat.cpp server_chat_convert_responses_to_chatcmpl: the body is copied (so top-level
        # chat fields go on); reasoning.effort -> reasoning_effort; the rest of `reasoning` dropped.
        body = dict(body)
        reasoning = body.pop("reasoning", None)
        if isinstance(reasoning, dict) and "effort" in reasoning:
            body["reasoning_effort"] = reasoning["effort"]
    # tools/server/server-common.cpp oaicompat_chat_params_parse: the request's chat_template_kwargs
    # merged over the server's; `enable_thinking` true/false sets the switch, a string is a 400;
    # reasoning_effort "none" -> thinking off (and the kwarg erased), another string -> template kwarg
    # `reasoning_effort`; a value of another type is read as absent (json_value's default).
    ctk = body.get("chat_template_kwargs")
    kwargs = dict(ctk) if isinstance(ctk, dict) else {}
    enable_thinking = model.family != "none"
    switch = kwargs.get("enable_thinking")
    if isinstance(switch, bool):
        enable_thinking = switch
    elif isinstance(switch, str):
        raise Refused('invalid type for "enable_thinking" (expected boolean, got string)')
    effort = None if legacy else body.get("reasoning_effort")
    if effort == "none":
        enable_thinking = False
        kwargs.pop("reasoning_effort", None)
    elif isinstance(effort, str) and effort:
        kwargs["reasoning_effort"] = effort
    kwargs["enable_thinking"] = enable_thinking
    # reasoning_budget_tokens || thinking_budget_tokens (-1: the server's --reasoning-budget, unlimited)
    budget = body.get("reasoning_budget_tokens", body.get("thinking_budget_tokens", -1))
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        budget = -1
    return template(model.family, kwargs, None if budget == -1 else budget, fallback=True)


def ollama(model: Model, surface: str, body: dict[str, Any], version: tuple[int, ...]) -> TemplateView:
    """Ollama: Go encoding/json (unknown fields ignored; a field of the wrong type is a 400)."""
    relax = False
    if surface in ("api_chat", "api_generate"):
        think = _ollama_think_value(body.get("think"), version)  # api/types.go ThinkValue.UnmarshalJSON
    elif surface in ("chat", "responses"):
        # openai/openai.go FromChatRequest: `reasoning.effort` (object first) else `reasoning_effort`;
        # a top-level `think` is not a field there; openai/responses.go: reasoning.effort, same function.
        reasoning = body.get("reasoning")
        if reasoning is not None and not isinstance(reasoning, dict):
            raise Refused("json: cannot unmarshal into Go struct field reasoning")
        if surface == "chat" and reasoning is None:
            effort = body.get("reasoning_effort", "")
        else:
            effort = (reasoning or {}).get("effort", "")
        if effort is None:
            effort = ""
        if not isinstance(effort, str):
            raise Refused("json: cannot unmarshal into Go struct field of type string")
        think = _think_from_reasoning_effort(effort, version)
    elif surface == "messages":
        # anthropic/anthropic.go: thinking enabled -> true, disabled -> false, budget ignored; adaptive
        # -> model default; output_config.effort (xhigh -> high) only when thinking set nothing, and
        # only from v0.23.4 (`git tag --contains` on the commit that added OutputConfig).
        # middleware/anthropic.go sets relax_thinking: a model that cannot think is not refused.
        relax = True
        think = None
        thinking = _object(body, "thinking")
        if thinking.get("type") == "enabled":
            think = True
        elif thinking.get("type") == "disabled":
            think = False
        effort = str(_object(body, "output_config").get("effort", "")).strip().lower() if version >= (0, 23, 4) else ""
        effort = "high" if effort == "xhigh" else effort
        if think is None and effort in ("high", "medium", "low", "max"):
            think = effort
    else:
        raise web.HTTPNotFound()
    return _ollama_chat(model, think, version, relax)


def _ollama_think_value(value: Any, version: tuple[int, ...]) -> bool | str | None:
    if value is None or isinstance(value, bool):
        return value
    levels = ("high", "medium", "low", "max") if version >= (0, 22, 0) else ("high", "medium", "low")
    if isinstance(value, str) and value in levels:
        return value
    raise Refused(f"invalid think value: {value!r}")


def _think_from_reasoning_effort(effort: str, version: tuple[int, ...]) -> bool | str | None:
    # openai/openai.go thinkFromReasoningEffort; before v0.32.11 only high/medium/low/max/none, and
    # `max` from v0.22.0 (`git tag --contains` on the commits that changed it).
    if effort == "":
        return None
    if effort == "none":
        return False
    if version >= (0, 32, 11):
        mapped = {"minimal": "low", "xhigh": "max", "ultra": "max"}.get(effort, effort)
    else:
        mapped = effort
    if mapped in ("low", "medium", "high") or (mapped == "max" and version >= (0, 22, 0)):
        return mapped
    raise Refused(f"invalid reasoning value: {effort!r}")


def _ollama_chat(model: Model, think: bool | str | None, version: tuple[int, ...], relax: bool) -> TemplateView:
    # server/routes.go ChatHandler / GenerateHandler
    if model.family == "gpt-oss" and think == "max":
        think = "high"  # harmony knows low/medium/high only
    if model.can_think:
        if think is None:
            think = True  # a thinking-capable model thinks unless told otherwise (v0.12.4)
        elif isinstance(think, str) and model.family != "gpt-oss" and version < (0, 17, 7):
            raise Refused(f'think value "{think}" is not supported for this model')
    elif think is not None and think is not False:
        if not relax:
            raise Refused(f'"{model.name}" does not support thinking')
        think = None
    return ollama_renderer(model.family, think)


# -- the apps ----------------------------------------------------------------------------------------

PATHS = {
    "chat": "/v1/chat/completions",
    "messages": "/v1/messages",
    "responses": "/v1/responses",
    "api_chat": "/api/chat",
    "api_generate": "/api/generate",
}
SURFACES: dict[Server, tuple[str, ...]] = {
    "vllm": ("chat", "messages", "responses"),
    "sglang": ("chat", "messages"),
    "llamacpp": ("chat", "messages", "responses"),
    "ollama": ("chat", "messages", "responses", "api_chat", "api_generate"),
}


def answer(surface: str, model: str) -> dict[str, Any]:
    """A small valid non-stream answer of ``surface``."""
    if surface == "messages":
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": "Hello."}], "stop_reason": "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    if surface == "responses":
        text = {"type": "output_text", "text": "Hello.", "annotations": []}
        item = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [text]}
        return {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": model,
                "output": [item], "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}  # fmt: skip
    if surface == "api_chat":
        return {"model": model, "created_at": "2026-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": "Hello."}, "done": True, "done_reason": "stop"}  # fmt: skip
    if surface == "api_generate":
        return {"model": model, "created_at": "2026-01-01T00:00:00Z", "response": "Hello.", "done": True,
                "done_reason": "stop"}  # fmt: skip
    message = {"role": "assistant", "content": "Hello."}
    return {"id": "c", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip


@dataclass
class Emulator:
    """One emulated server serving ``models``; ``seen`` logs what each request's template saw (or the
    400 it got), ``bodies`` the request bodies as received."""

    server: Server
    models: tuple[Model, ...]
    version: tuple[int, ...] = (0, 33, 0)
    """Ollama's version, where what it accepts changed."""
    legacy: bool = False
    """A llama.cpp build from before it read reasoning_effort."""
    seen: list[TemplateView | Refused] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def model(self, name: str) -> Model:
        for model in self.models:
            if model.name == name:
                return model
        raise web.HTTPNotFound(text=json.dumps({"error": f"model {name!r} not found"}), content_type="application/json")

    def read(self, surface: str, body: dict[str, Any]) -> TemplateView:
        """What the template sees of ``body`` sent to ``surface``, or :class:`Refused`."""
        model = self.model(str(body.get("model")))
        if self.server == "vllm":
            return vllm(model, surface, body)
        if self.server == "sglang":
            return sglang(model, surface, body)
        if self.server == "llamacpp":
            return llamacpp(model, surface, body, legacy=self.legacy)
        return ollama(model, surface, body, self.version)

    def app(self) -> web.Application:
        app = web.Application()
        for surface in SURFACES[self.server]:
            app.router.add_post(PATHS[surface], self._handler(surface))
        if self.server == "ollama":
            app.router.add_post("/api/show", self._show)
            app.router.add_get("/api/version", self._version)
        return app

    def _handler(self, surface: str):  # type: ignore[no-untyped-def]
        async def handle(request: web.Request) -> web.Response:
            raw = await request.read()
            self.bodies.append(raw)
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise Refused("the body is not a JSON object")
                view = self.read(surface, body)
            except (Refused, ValueError) as refused:
                error = refused if isinstance(refused, Refused) else Refused(str(refused))
                self.seen.append(error)
                return web.json_response({"error": {"message": str(error), "code": 400}}, status=400)
            self.seen.append(view)
            return web.json_response(answer(surface, str(body["model"])))

        return handle

    async def _show(self, request: web.Request) -> web.Response:
        # server/routes.go ShowHandler: the model's capabilities
        model = self.model(str((await request.json()).get("model")))
        capabilities = ["completion", "tools"] + (["thinking"] if model.can_think else [])
        return web.json_response({"capabilities": capabilities, "details": {"family": model.family}})

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": ".".join(map(str, self.version))})


# -- /tokenize ---------------------------------------------------------------------------------------
# Each server's tokenize endpoint as its source reads and answers it, over one toy tokenizer: a token
# is a run of letters or digits with the blanks before it, or one other character with them, or the
# blanks at the end. A tokenizer's special tokens: BOS, added at the front when asked for.

TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]|\s+", re.UNICODE)
BOS = 1


def toy_tokens(text: str, add_special: bool) -> list[int]:
    """``text``'s token ids under the toy tokenizer (an id per token, its first character's code point)."""
    tokens = [ord(piece[0]) + 2 for piece in TOKEN.findall(text)]
    return [BOS, *tokens] if add_special else tokens


def tokenize_vllm(body: dict[str, Any]) -> web.Response:
    """vLLM ``POST /tokenize`` (vllm/entrypoints/openai/protocol.py TokenizeCompletionRequest): ``prompt``
    a string, ``add_special_tokens`` (default true); a validation error is a 400; the answer carries
    ``count``, ``max_model_len``, ``tokens`` and ``token_strs``."""
    prompt, add = body.get("prompt"), body.get("add_special_tokens", True)
    if not isinstance(prompt, str) or not isinstance(add, bool):
        return web.json_response({"object": "error", "message": "prompt: Field required", "code": 400}, status=400)
    tokens = toy_tokens(prompt, add)
    return web.json_response({"count": len(tokens), "max_model_len": 32768, "tokens": tokens, "token_strs": None})


def tokenize_sglang(body: dict[str, Any]) -> web.Response:
    """SGLang ``POST /tokenize`` (python/sglang/srt/entrypoints/openai/protocol.py TokenizeRequest): ``prompt``
    a string or a list of them (counted one by one), ``add_special_tokens`` (default true); the answer
    carries ``tokens``, ``count`` and ``max_model_len``."""
    prompt, add = body.get("prompt"), body.get("add_special_tokens", True)
    if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt) and isinstance(add, bool):
        lists = [toy_tokens(p, add) for p in prompt]
        return web.json_response({"tokens": lists, "count": [len(t) for t in lists], "max_model_len": 32768})
    if not isinstance(prompt, str) or not isinstance(add, bool):
        return web.json_response({"object": "error", "message": "prompt: Field required", "code": 400}, status=400)
    tokens = toy_tokens(prompt, add)
    return web.json_response({"tokens": tokens, "count": len(tokens), "max_model_len": 32768})


def tokenize_llamacpp(body: dict[str, Any]) -> web.Response:
    """llama-server ``POST /tokenize`` (tools/server/server.cpp handle_tokenize): ``content`` (no
    content: no tokens), ``add_special`` (default false); the answer is ``{"tokens": [...]}``."""
    content, add = body.get("content"), body.get("add_special", False)
    tokens = toy_tokens(content, add is True) if isinstance(content, str) else []
    return web.json_response({"tokens": tokens})


TOKENIZERS = {"vllm": tokenize_vllm, "sglang": tokenize_sglang, "llamacpp": tokenize_llamacpp}


def add_tokenize(app: web.Application, server: str, asked: list[dict[str, Any]]) -> None:
    """``POST /tokenize`` on ``app`` as ``server`` answers it; each request's body goes to ``asked``."""
    answer = TOKENIZERS[server]

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        asked.append(body)
        return answer(body)

    app.router.add_post("/tokenize", tokenize)
