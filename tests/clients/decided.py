"""The suite's tiny model (``llama.py``), made to decide whether it thinks by where it stands rather than by
the prompt (served by :class:`.thinking.Thinking` with ``decided=True``).

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

from pathlib import Path


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
