"""The public surface stays deliberate and `import agent_runtime` stays light."""

import subprocess
import sys

import agent_runtime

#: The public surface, name for name: a change here is a deliberate API change (only add names).
PUBLIC = {
    "__version__",
    # configuration, devices, observations, actions, coordinates
    "Action",
    "ActionResult",
    "CoordMapper",
    "CoordSpace",
    "Device",
    "DeviceInfo",
    "Observation",
    "RuntimeConfig",
    "Size",
    "UIElement",
    "compress_ui_xml",
    "load_config",
    "parse_action",
    "parse_ui_xml",
    "resolve_device",
    "smart_resize",
    # the runtime (loaded lazily) and the events it streams
    "ActionExecuted",
    "Event",
    "InputAnswered",
    "InputReply",
    "InputRequest",
    "InputRequested",
    "SafetyConfig",
    "NotesEvent",
    "Notice",
    "RoleOutputEvent",
    "RunFinished",
    "RunInterrupted",
    "RunResult",
    "RunStarted",
    "Runtime",
    "StepStarted",
    "VerdictEvent",
    # every error agent_runtime.errors defines
    "ActionParseError",
    "AgentRuntimeError",
    "ClusterError",
    "ConfigError",
    "DependencyError",
    "DeviceError",
    "DeviceNotFoundError",
    "MemoryStoreError",
    "ModelError",
    "ParseError",
    "TaskError",
    "TraceError",
    "TraceWriteError",
    "TrainingError",
    "RunLockedError",
}


def test_all_is_exactly_the_public_surface():
    assert len(agent_runtime.__all__) == len(set(agent_runtime.__all__)), "duplicates in __all__"
    assert set(agent_runtime.__all__) == PUBLIC


def test_every_error_class_is_exported():
    import inspect

    from agent_runtime import errors

    defined = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == errors.__name__
    }
    assert defined <= set(agent_runtime.__all__)


def test_every_event_type_is_exported():
    from typing import get_args

    from agent_runtime import events

    union, _ = get_args(events.Event)  # Annotated[A | B | ..., Field(discriminator="type")]
    assert {cls.__name__ for cls in get_args(union)} <= set(agent_runtime.__all__)


def test_all_is_sorted_and_importable():
    assert list(agent_runtime.__all__) == sorted(agent_runtime.__all__)
    for name in agent_runtime.__all__:
        assert getattr(agent_runtime, name) is not None, name


def test_import_loads_no_heavy_dependencies():
    code = (
        "import sys, agent_runtime, agent_runtime.cli;"
        "heavy = [m for m in ('torch', 'transformers', 'trl', 'chromadb', 'adbutils', 'pyautogui', 'mss',"
        " 'sentence_transformers', 'datasets', 'fastapi') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_unbuilt_backend_names_its_extra(monkeypatch):
    import importlib.util

    from agent_runtime.devices.registry import check_backend
    from agent_runtime.errors import DependencyError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "adbutils" else real(name, *a)
    )
    try:
        check_backend("adb")
    except DependencyError as exc:
        assert "agent-runtime[android]" in str(exc)
    else:
        raise AssertionError("expected DependencyError")
