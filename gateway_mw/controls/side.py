"""What the reasoning controls need of a surface: its :class:`SurfaceControls`, declared by its
definition (``controls``), which the caller hands in with the surface's name (a :class:`ControlSide`)
so that the controls never import the surfaces."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, Protocol

from ..config import Surface, ThinkExtractConfig
from .forms import FORMS, Form

__all__ = ["ControlSide", "SurfaceControls"]


def _always(config: ThinkExtractConfig) -> bool:
    return True


class SurfaceControls:
    """A surface's own form of the control, and how its requests stream."""

    __slots__ = (
        "conversation",
        "forms",
        "own",
        "reasoning_as_events",
        "streamed",
        "streams_unless_false",
        "texts_alone",
        "texts_around",
    )

    def __init__(
        self,
        own: Form,
        streamed: Mapping[str, bytes],
        *,
        streams_unless_false: bool = False,
        reasoning_as_events: Callable[[ThinkExtractConfig], bool] = _always,
        conversation: Literal["messages", "input"] = "messages",
        texts_around: tuple[str, ...] = (),
        texts_alone: tuple[str, ...] = (),
    ) -> None:
        self.own = own
        """Its own form of the control, read before the others."""
        self.forms = (own, *(form for form in FORMS if form is not own))
        """Every form in the order it is read: its own first, then the others (:data:`~.forms.FORMS`)."""
        self.streamed = streamed
        """The top-level members a request that does not stream is sent with when the gateway enforces
        its budget: the gateway counts the reasoning of a stream, and gives the client the body it makes."""
        self.streams_unless_false = streams_unless_false
        """A request streams unless its ``stream`` is ``false``; otherwise only when it is ``true``."""
        self.reasoning_as_events = reasoning_as_events
        """Whether, under a configuration, the client gets the reasoning in events the gateway counts as
        they go (a budget the gateway enforces needs them)."""
        self.conversation = conversation
        """The member that holds its conversation (a list of messages; Responses': or a string)."""
        self.texts_around = texts_around
        """The other members whose text a switch may end (the system prompt, the instructions), read
        after the conversation's."""
        self.texts_alone = texts_alone
        """The members that carry the text where a body has no conversation (Ollama's ``/api/generate``:
        its prompt and system), read before :attr:`texts_around`."""

    def streams(self, stream: bytes) -> bool:
        """Whether a request whose ``stream`` member is ``stream`` (its JSON, stripped) streams."""
        return stream != b"false" if self.streams_unless_false else stream == b"true"


class ControlSide(Protocol):
    """A surface as the controls read it; every surface's definition is one."""

    @property
    def name(self) -> Surface:
        """Its name: the key of the tables by server and surface (the writers, the continuations)."""
        ...

    @property
    def controls(self) -> SurfaceControls: ...
