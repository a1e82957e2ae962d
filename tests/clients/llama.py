"""A real inference server for the suite: llama.cpp's ``llama-server`` serving a tiny random-weight model.

The model is built here: a byte-level BPE tokenizer trained (with ``tokenizers``) on a few words, with
``<think>`` and ``</think>`` as ordinary tokens, and a two-layer llama of random weights written with
``gguf``. The server runs with a server-wide grammar that forces ``<think>`` + words + ``</think>`` +
words on every request and ``--reasoning-format none``, so its answers carry the reasoning inline the
way a server without a reasoning parser sends it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

WORDS = ("alpha", "beta", "gamma", "delta")
GRAMMAR = r"""
root  ::= "<think>" words "</think>" words
words ::= word (" " word){0,3}
word  ::= "alpha" | "beta" | "gamma" | "delta"
"""
# A template the server's Jinja engine renders: roles in plain markers, reasoning of earlier turns dropped.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
# The same markers, with the switch a Qwen3 hybrid's template reads: ``enable_thinking`` false closes an
# empty reasoning block after the generation prompt, so that the model answers without reasoning.
SWITCH_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}"
    "{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>", "<|tool|>"]


def build_gguf(path: Path, n_vocab: int = 2048, seed: int = 0) -> None:
    import gguf
    import numpy as np
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=n_vocab,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [" ".join(WORDS)] * 50 + [Path(__file__).read_text()]
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.add_tokens(["<think>", "</think>"])
    spec = json.loads(tokenizer.to_str())
    vocab: dict[str, int] = dict(spec["model"]["vocab"])
    for added in spec["added_tokens"]:
        vocab[added["content"]] = added["id"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    assert [vocab[t] for t in tokens] == list(range(len(tokens)))
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    types = [
        gguf.TokenType.CONTROL
        if t in SPECIAL
        else gguf.TokenType.USER_DEFINED
        if t in ("<think>", "</think>")
        else gguf.TokenType.NORMAL
        for t in tokens
    ]

    n_embd, n_head, n_layer, n_ff, n_ctx = 64, 4, 2, 128, 131072
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("gateway-mw-tiny-random")
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab["<|endoftext|>"])
    writer.add_eos_token_id(vocab["<|endoftext|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    rng = np.random.default_rng(seed)

    def tensor(name: str, *shape: int, ones: bool = False) -> None:
        data = np.ones(shape, np.float32) if ones else (rng.standard_normal(shape) * 0.02).astype(np.float32)
        writer.add_tensor(name, data)

    tensor("token_embd.weight", len(tokens), n_embd)
    tensor("output_norm.weight", n_embd, ones=True)
    tensor("output.weight", len(tokens), n_embd)
    for i in range(n_layer):
        tensor(f"blk.{i}.attn_norm.weight", n_embd, ones=True)
        for part in ("q", "k", "v", "output"):
            tensor(f"blk.{i}.attn_{part}.weight", n_embd, n_embd)
        tensor(f"blk.{i}.ffn_norm.weight", n_embd, ones=True)
        tensor(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


class LlamaServer:
    """``flags`` are added to the command line (another chat template, a reasoning default…)."""

    def __init__(self, binary: Path, workdir: Path, port: int, env: dict[str, str], *flags: str) -> None:
        model, grammar = workdir / "tiny.gguf", workdir / "think.gbnf"
        build_gguf(model)
        grammar.write_text(GRAMMAR)
        self.base = f"http://127.0.0.1:{port}"
        self.log = (workdir / "llama-server.log").open("w")
        cmd = [
            str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--grammar-file", str(grammar), "--reasoning-format", "none", "--jinja",
            "--ctx-size", "131072", "--parallel", "1", "--threads", str(min(2, os.cpu_count() or 1)),
            "--seed", "0", "--temp", "1.0", "--n-predict", "64", "--no-webui", "--offline", *flags,
        ]  # fmt: skip
        self.process = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("llama-server did not start:\n" + (workdir / "llama-server.log").read_text()[-4000:])
            time.sleep(0.2)

    def generation_prompt(self) -> str:
        """What the chat template rendered after the last message of the request its one slot served last
        (``GET /slots``): where a template's thinking switch shows."""
        with urllib.request.urlopen(self.base + "/slots", timeout=10) as r:
            (slot,) = json.load(r)
        prompt: str = slot["params"]["generation_prompt"]
        return prompt

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.log.close()
