"""Where a run's data may go, and what is taken out before it goes.

**One redaction for every sink.** The values the configuration marks sensitive
(``[memory] sensitive``) are removed by one :class:`Redactor` before data reaches any sink: the
trace files (:class:`~agent_runtime.traces.TraceWriter`), the event stream and the
:class:`~agent_runtime.runtime.RunResult` of :class:`~agent_runtime.runtime.Runtime`, the
experience memory, and LangSmith when it is switched on.

**Third-party tracing is opt-in.** LangChain sends every chat-model call — prompts and
screenshots included — to LangSmith as soon as ``LANGSMITH_TRACING``/``LANGCHAIN_TRACING_V2``
is ``true`` in the environment. A run of the runtime's graph is traced only when the
configuration says so (``[tracing] langsmith = true``); otherwise tracing is switched off for
that run whatever the environment says. When it is on, the runs go through a LangSmith client
of their own whose anonymizer redacts the sensitive values and, unless ``[tracing] screenshots =
true``, replaces images with a placeholder; endpoint, API key and project still come from
LangSmith's own variables (``LANGSMITH_ENDPOINT``, ``LANGSMITH_API_KEY``, ``LANGSMITH_PROJECT``).

The switch works on context variables only, never on ``os.environ``: it holds for the thread
that drives the run and for the threads the run hands work to with :class:`ContextThreadPool`,
and a second run (or the rest of the process) keeps its own setting.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

if TYPE_CHECKING:
    from agent_runtime.config import RuntimeConfig

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")

#: What an image sent to LangSmith becomes unless ``[tracing] screenshots = true``.
IMAGE_PLACEHOLDER = "[image omitted]"
_DATA_IMAGE = re.compile(r"^data:image/[\w.+-]+;base64,", re.IGNORECASE)


class Redactor:
    """Replaces sensitive values (``[memory] sensitive``) in every string of a record.

    Redaction works on the data, never on serialized JSON, so a short secret that happens to
    equal a key name cannot corrupt the file. Screenshots are pixels and are not redacted.

    >>> Redactor(["hunter2"]).apply({"text": "password hunter2", "n": 1})
    {'text': 'password [REDACTED]', 'n': 1}
    """

    MASK = "[REDACTED]"

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values = sorted({v for v in values if v}, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self.values)

    def text(self, value: str) -> str:
        for secret in self.values:
            if secret in value:
                value = value.replace(secret, self.MASK)
        return value

    def apply(self, obj: Any) -> Any:
        """A copy of a JSON-like value with every string value redacted (keys are schema, kept)."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {k: self.apply(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.apply(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.apply(v) for v in obj)
        return obj

    def model(self, obj: M) -> M:
        """A pydantic model (an event, a result) with every string field redacted.

        >>> from agent_runtime.events import Notice
        >>> Redactor(["hunter2"]).model(Notice(message="typed hunter2", time=0)).message
        'typed [REDACTED]'
        """
        if not self.values:
            return obj
        return type(obj).model_validate(self.apply(obj.model_dump()))


def without_images(obj: Any) -> Any:
    """A copy of a JSON-like value with every ``data:image/…;base64,…`` string replaced.

    >>> without_images({"image_url": {"url": "data:image/png;base64,iVBOR"}, "text": "hi"})
    {'image_url': {'url': '[image omitted]'}, 'text': 'hi'}
    """
    if isinstance(obj, str):
        return IMAGE_PLACEHOLDER if _DATA_IMAGE.match(obj) else obj
    if isinstance(obj, dict):
        return {k: without_images(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [without_images(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(without_images(v) for v in obj)
    return obj


def langsmith_anonymizer(sensitive: Iterable[str], *, screenshots: bool = False) -> Callable[[Any], Any]:
    """What LangSmith's client applies to run inputs, outputs, errors and metadata before upload.

    >>> scrub = langsmith_anonymizer(["hunter2"])
    >>> scrub({"messages": ["pw hunter2", "data:image/png;base64,AAAA"]})
    {'messages': ['pw [REDACTED]', '[image omitted]']}
    """
    redactor = Redactor(sensitive)

    def anonymize(data: Any) -> Any:
        return redactor.apply(data if screenshots else without_images(data))

    return anonymize


class ThirdPartyTracing:
    """LangChain/LangSmith tracing for one run, as the configuration has it.

    ``with tracing.active():`` around every piece of the run's work; :meth:`flush` at its end.
    Off (the default): LangChain adds no tracer and LangSmith's ``tracing_context`` says
    disabled, whatever ``LANGSMITH_TRACING``/``LANGCHAIN_TRACING_V2`` say. On: one tracer for the
    whole run, posting through a client with :func:`langsmith_anonymizer`.
    """

    def __init__(self, config: RuntimeConfig) -> None:
        self.enabled = config.tracing.langsmith
        self.tracer: Any = None
        if self.enabled:
            from langchain_core.tracers.langchain import LangChainTracer
            from langsmith import Client

            scrub = langsmith_anonymizer(config.memory.sensitive, screenshots=config.tracing.screenshots)
            client = Client(
                # inputs, outputs, errors and metadata, in their JSON form …
                anonymizer=scrub,
                # … and then every whole run operation (the model's serialized form, names,
                # events) right before it is sent: one operation at a time, so none waits.
                process_buffered_run_ops=lambda ops: [scrub(op) for op in ops],
                run_ops_buffer_size=1,
            )
            self.tracer = LangChainTracer(client=client)

    @contextmanager
    def active(self) -> Iterator[None]:
        from langchain_core.tracers.context import tracing_v2_callback_var
        from langsmith.run_helpers import tracing_context

        token = tracing_v2_callback_var.set(self.tracer)
        try:
            if self.enabled:
                yield
            else:
                with tracing_context(enabled=False):
                    yield
        finally:
            tracing_v2_callback_var.reset(token)

    def flush(self) -> None:
        """Deliver what the run traced before the run is reported finished (no-op when off)."""
        if self.tracer is not None:
            self.tracer.wait_for_futures()


def private_run(run: Generator[M, None, R], config: RuntimeConfig) -> Generator[M, None, R]:
    """``run`` (a runtime's event generator) with the sinks guarded: every step of its work under
    :class:`ThirdPartyTracing`, every event it yields and the value it returns redacted.

    Each ``next()`` is wrapped on its own, so the tracing setting never leaks to the code that
    consumes the events, and a consumer that stops early still closes the run under it.
    """
    redactor = Redactor(config.memory.sensitive)
    tracing = ThirdPartyTracing(config)
    try:
        while True:
            with tracing.active():
                try:
                    event = next(run)
                except StopIteration as stop:
                    result = stop.value
                    return redactor.model(result) if isinstance(result, BaseModel) else result  # type: ignore[return-value]
            yield redactor.model(event)
    finally:
        with tracing.active():
            run.close()
        tracing.flush()


class ContextThreadPool(ThreadPoolExecutor):
    """A thread pool whose tasks run in a copy of the submitting thread's context variables,
    so work handed to it keeps the run's tracing setting (and LangChain's run config)."""

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        context = contextvars.copy_context()
        return super().submit(context.run, fn, *args, **kwargs)
