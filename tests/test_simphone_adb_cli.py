"""``agent-runtime simphone serve`` and ``simphone screenshot``, run as real processes."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner, Result

from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.adb import AdbServer


def test_serve_exposes_seeded_phones_until_adb_kill_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADBUTILS_ADB_PATH", "/bin/true")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agent_runtime.cli",
            "simphone",
            "serve",
            "--port",
            "0",
            "--devices",
            "2",
            "--seed",
            "5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("serving 2 SimPhone(s) on 127.0.0.1:"), first + (
            proc.stderr.read() if proc.stderr else ""
        )
        port = int(first.split("127.0.0.1:")[1].split(":")[0])
        import adbutils

        client = adbutils.AdbClient(host="127.0.0.1", port=port)
        assert [d.serial for d in client.device_list()] == ["emulator-5554", "emulator-5556"]
        # Phone i has seed S+i: the second phone is SimPhone(6), pixel for pixel.
        assert client.device("emulator-5556").dump_hierarchy() == SimPhone(6, serial="emulator-5556").ui_xml()
        client.server_kill()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run(*args: str) -> Result:
    """Run a ``simphone`` command in-process (the serve test above covers the real process)."""
    from agent_runtime.cli import app

    return CliRunner().invoke(app, ["simphone", *args])


def test_serve_on_a_busy_port_is_a_clear_error() -> None:
    with AdbServer([SimPhone(0)]) as busy:
        result = run("serve", "--port", str(busy.port))
    assert result.exit_code == 1
    assert "cannot listen on 127.0.0.1" in result.stderr and "Traceback" not in result.output
    bad = run("serve", "--devices", "0")
    assert bad.exit_code == 2 and "--devices 0 is out of range" in bad.stderr


def test_screenshot_writes_png_and_xml(tmp_path: Path) -> None:
    out, xml = tmp_path / "shots" / "clock.png", tmp_path / "clock.xml"
    result = run("screenshot", "--seed", "3", "--app", "clock", "--out", str(out), "--xml", str(xml))
    assert result.exit_code == 0, result.output
    phone = SimPhone(3)
    phone.launch("com.android.deskclock")
    assert out.read_bytes() == phone.screenshot_png()
    assert Image.open(io.BytesIO(out.read_bytes())).size == (1080, 2400)
    assert xml.read_text() == phone.ui_xml()
    missing = run("screenshot", "--app", "Teleporter", "--out", str(tmp_path / "x.png"))
    assert missing.exit_code == 2 and "no app 'Teleporter'" in missing.stderr and "Clock" in missing.stderr
    assert not (tmp_path / "x.png").exists()


def test_help_lists_the_simphone_commands() -> None:
    result = run("--help")
    assert result.exit_code == 0 and "serve" in result.output and "screenshot" in result.output
