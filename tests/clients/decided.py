"""The suite's tiny model (``llama.py``), made to decide whether it thinks by where it stands rather than by
the prompt, and ``llama-server`` serving it.

Where a grammar lets the model think or answer (``think? answer``), the random model's choice depends on
the prompt: a test that needs a reasoning, or a continuation without a second one, would have to search
for a prompt. Here one dimension of the embeddings, far larger than the random weights' reach, says "the
generation prompt ends here" (``<|assistant|>``: +1) or "a reasoning was closed here" (``</think>``: -1),
and only the output of ``<think>`` and of the pieces a grammar may spell it with (``<``, ``<t``…) reads
it: the model always opens its reasoning after the generation prompt and never after a closing tag.

The model is edited in the file ``build_gguf`` wrote (``llama.py`` is left as it is: its own text is the
tokenizer's corpus, so any edit there makes another model for every test).
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path

from .llama import CHAT_TEMPLATE, build_gguf


def decide(path: Path) -> None:
    """Edit, in place, the model ``build_gguf`` wrote at ``path``."""
    import gguf

    reader = gguf.GGUFReader(path, "r+")
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode() for i in field.data]
    ids = {token: i for i, token in enumerate(tokens)}
    opening = [i for i, token in enumerate(tokens) if token and "<think>".startswith(token)]
    weights = {t.name: t.data for t in reader.tensors}
    embeddings, output = weights["token_embd.weight"], weights["output.weight"]
    embeddings[:, 0] = 0.0
    embeddings[ids["<|assistant|>"], 0], embeddings[ids["</think>"], 0] = 1.0, -1.0
    output[:, 0] = 0.0
    output[opening, 0] = 2.0
    reader.data.flush()


class Decided:
    """``llama-server`` serving the decided model under ``grammar`` (every answer follows it)."""

    def __init__(self, binary: Path, workdir: Path, port: int, env: dict[str, str], grammar: str) -> None:
        model, grammar_file = workdir / "tiny.gguf", workdir / "decided.gbnf"
        build_gguf(model)
        decide(model)
        grammar_file.write_text(grammar)
        self.base = f"http://127.0.0.1:{port}"
        cmd = [
            str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--grammar-file", str(grammar_file), "--reasoning-format", "none", "--jinja",
            "--chat-template", CHAT_TEMPLATE, "--ctx-size", "131072", "--parallel", "1", "--threads", "2",
            "--seed", "0", "--temp", "1.0", "--n-predict", "4096", "--no-webui", "--offline",
        ]  # fmt: skip
        self.log = (workdir / "llama-server.log").open("w")
        self.process = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):  # a bound for a hang, not a speed: it answers when it is up
            if self.process.poll() is not None:
                break
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("llama-server did not start:\n" + (workdir / "llama-server.log").read_text()[-4000:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.log.close()
