"""Reasoning controls: what a client asks of the model's thinking (off, an effort, a token budget),
read from whichever form its API says it in, and written where the upstream's server and the
model's chat template read it. Sans-I/O: the middleware hands in the body and what is known of
the model (:class:`ModelInfo`), and takes back the body to forward."""

from __future__ import annotations

from .intent import EFFORTS, Effort, Intent, IntentKind, ModelInfo, ModelInfoSource

__all__ = ["EFFORTS", "Effort", "Intent", "IntentKind", "ModelInfo", "ModelInfoSource"]
