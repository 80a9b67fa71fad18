"""The public surface stays deliberate and `import agent_runtime` stays light."""

import subprocess
import sys

import agent_runtime


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
