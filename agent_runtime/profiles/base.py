"""What a model profile is: the request a model family was trained on, and how its replies read.

A :class:`Profile` turns one step of the ``single`` graph (:class:`Request`: the task, the
current screen, the earlier steps' replies and screens) into the exact conversation that family's
own code sends (:meth:`Profile.render`), reads a reply back into the runtime's one action schema
(:meth:`Profile.parse`), and fixes the model config fields its training fixed — image format,
size rule, coordinate space (:meth:`Profile.effective`). ``roles`` is the hook for profiles
that also bring per-role templates (Mobile-Agent-v3's four roles under ``gui-owl``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from typing import ClassVar

from agent_runtime.config import ModelConfig
from agent_runtime.coords import CoordSpace, ImageFormat, Size
from agent_runtime.errors import ConfigError
from agent_runtime.models.images import profile_image_format
from agent_runtime.role_outputs import WorkerOutput
from agent_runtime.roles.caller import ImageInput, Turn


@dataclass(frozen=True)
class PastTurn:
    """An earlier step as a profile resends it: the model's whole reply, the one-line summary
    its history format keeps, and its screenshot (only for the steps the layout shows again)."""

    reply: str
    summary: str
    image: ImageInput | None = None


@dataclass(frozen=True)
class Request:
    """One step of the single graph, before any profile lays it out."""

    task: str
    screen: Size
    image: ImageInput
    history: tuple[PastTurn, ...] = ()
    answers: tuple[str, ...] = ()
    today: date = field(default_factory=date.today)

    @property
    def instruction(self) -> str:
        """The task, with the user's answers to the model's questions in parentheses — the
        official GUI-Owl-1.5 script's way of adding information to the instruction."""
        return f"{self.task} ({'; '.join(self.answers)})" if self.answers else self.task


def read_text(name: str) -> str:
    """A prompt text shipped as package data (``agent_runtime/profiles/data/NAME``)."""
    return resources.files("agent_runtime.profiles").joinpath("data", name).read_text(encoding="utf-8")


class Profile(ABC):
    """A model family's request layout and reply format (see the module doc)."""

    name: ClassVar[str]
    #: Where the texts and layout come from (repository, path, commit), for doctor and the docs.
    source: ClassVar[str]
    image_format: ClassVar[ImageFormat] = "png"
    coords: ClassVar[CoordSpace]
    min_pixels: ClassVar[int]
    max_pixels: ClassVar[int]
    #: How many earlier steps' screenshots the layout sends again (0: only the current one).
    screens_kept: ClassVar[int] = 0
    #: What a re-ask shows of the expected reply.
    reply_format: ClassVar[str]
    #: Role -> template file of this profile, for the roles it gives its own prompts.
    roles: ClassVar[Mapping[str, str]] = {}

    def effective(self, cfg: ModelConfig) -> ModelConfig:
        """``cfg`` with the fields this family was trained with: coordinate space and image size
        rule always; the image format unless the config sets ``image_format`` itself."""
        return cfg.model_copy(
            update={
                "coords": self.coords,
                "min_pixels": self.min_pixels,
                "max_pixels": self.max_pixels,
                "image_format": profile_image_format(cfg, self.image_format),
            }
        )

    def check_platform(self, platform: str) -> None:
        """Official profiles are the families' phone prompts; a desktop run is refused clearly."""
        if platform != "mobile":
            raise ConfigError(
                f"model profile {self.name!r} has the {self.name} phone prompts only, not a {platform} one",
                hint="set profile = 'agent-runtime' for this model on a desktop (docs/models.md)",
            )

    @abstractmethod
    def render(self, request: Request) -> list[Turn]:
        """The conversation this family's own code sends for ``request``."""

    @abstractmethod
    def parse(self, text: str, screen: Size) -> WorkerOutput:
        """A reply -> one action in this profile's coordinate space (``screen``: the true
        screen size, for actions whose extent depends on it)."""

    @abstractmethod
    def summary(self, reply: str, output: WorkerOutput) -> str:
        """The line this family's history keeps for a step."""
