"""Role prompt templates: Jinja files shipped with the package, overridable per role.

Templates render with ``StrictUndefined``, so a template that names a variable the role does not
provide fails loudly (as a :class:`ConfigError` naming the file) instead of sending a prompt with
a hole in it. ``[roles.worker] prompt = "my_worker.j2"`` replaces the built-in template.

Two built-in sets exist, chosen by a model's ``prompts`` setting: ``full`` (the Mobile-Agent-v3
prompts, for VLMs and large LMs) and ``compact`` (``prompts/compact/``: the same inputs and reply
format in a fraction of the tokens, for small text-only models whose CPU cost is the prompt).
Templates may use the ``compact_rows`` filter to shorten an indexed UI tree, and must pass what
the screen shows through ``screen_data`` (:func:`~agent_runtime.memory.untrusted.as_data`) inside
its block between the ``SCREEN`` markers: screen text comes from apps, web pages and other
people, and nothing in it may end the block or fake one. The tree text itself (``tree_text``) stays raw,
since demos, trainers and ``compact_rows`` read it as it is.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from agent_runtime.errors import ConfigError
from agent_runtime.memory.untrusted import as_data
from agent_runtime.observation import compact_rows

_PROMPTS_PACKAGE = "agent_runtime.roles"
_PROMPTS_DIR = "prompts"


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(_PROMPTS_PACKAGE, _PROMPTS_DIR),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )
    env.filters["compact_rows"] = compact_rows
    env.filters["screen_data"] = as_data
    return env


class PromptTemplate:
    """A compiled template plus where it came from (for error messages and traces)."""

    def __init__(self, template: jinja2.Template, source: str) -> None:
        self._template = template
        self.source = source

    def render(self, **variables: Any) -> str:
        try:
            return self._template.render(**variables).strip() + "\n"
        except jinja2.UndefinedError as exc:
            raise ConfigError(
                f"prompt template {self.source} uses an undefined variable: {exc.message}",
                hint="a role's template may only use the variables listed at its top",
            ) from None
        except jinja2.TemplateError as exc:
            raise ConfigError(f"prompt template {self.source} failed to render: {exc}") from None


def load_template(name: str, override: Path | None = None) -> PromptTemplate:
    """The built-in template ``name`` (``"worker.j2"``), or the file ``override`` when given."""
    env = _environment()
    if override is None:
        return PromptTemplate(env.get_template(name), f"<built-in {name}>")
    path = Path(override).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read prompt template {path}: {exc}", hint="check [roles.*] prompt"
        ) from None
    try:
        return PromptTemplate(env.from_string(text), str(path))
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"prompt template {path} line {exc.lineno}: {exc.message}") from None


def role_template(name: str, prompts: str = "full", override: Path | None = None) -> PromptTemplate:
    """A role's template from the ``prompts`` set (``full`` | ``compact``), or ``override``."""
    return load_template(name if prompts == "full" else f"{prompts}/{name}", override)
