"""Reasoning controls: what a client asks of the model's thinking (off, an effort, a token budget),
read from whichever form its API says it in, and written where the upstream's server and the
model's chat template read it. Sans-I/O: the middleware hands in the body and what is known of
the model (:class:`ModelInfo`), and takes back the body to forward.

A request goes through three steps: :func:`read_intent` (the client's intent, from the body's
:class:`ControlFields`), :func:`write_controls` (the operator's default or pin applied, then the
edits for the server, the surface and the model's ``template_switch``: a :class:`Controlled`), and
:func:`apply_edits` (the body with those top-level members written, every other one as it came).
"""

from __future__ import annotations

from .edit import Edits, apply_edits
from .fields import ControlFields, read_fields
from .intent import EFFORTS, Effort, Intent, IntentKind, ModelInfo, ModelInfoSource
from .operator import decide, operator_intent
from .out import Outcome
from .read import read_intent
from .side import ControlSide, SurfaceControls
from .text import read_with_texts
from .write import WRITERS, Controlled, needs_model_info, write_controls

__all__ = [
    "EFFORTS",
    "WRITERS",
    "ControlFields",
    "ControlSide",
    "Controlled",
    "Edits",
    "Effort",
    "Intent",
    "IntentKind",
    "ModelInfo",
    "ModelInfoSource",
    "Outcome",
    "SurfaceControls",
    "apply_edits",
    "decide",
    "needs_model_info",
    "operator_intent",
    "read_fields",
    "read_intent",
    "read_with_texts",
    "write_controls",
]
