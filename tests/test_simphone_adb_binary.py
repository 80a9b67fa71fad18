"""SimPhone's adb endpoint driven by the real ``adb`` client binary shipped in the adbutils wheel."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_runtime.observation import parse_ui_xml
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.adb import AdbServer

Adb = Callable[..., subprocess.CompletedProcess[bytes]]


@pytest.fixture()
def server() -> Iterator[AdbServer]:
    with AdbServer([SimPhone(0, serial="emulator-5554"), SimPhone(1, serial="emulator-5556")]) as srv:
        yield srv


@pytest.fixture()
def adb(server: AdbServer) -> Adb:
    import adbutils

    binary = Path(adbutils.__file__).parent / "binaries" / "adb"
    if not binary.is_file():
        pytest.skip(f"this adbutils wheel ships no adb binary at {binary}")

    def run(
        *args: str, serial: str | None = "emulator-5554", stdin: bytes = b""
    ) -> subprocess.CompletedProcess[bytes]:
        where = ["-s", serial] if serial else []
        # The server is up before adb runs, so adb never starts a daemon of its own.
        return subprocess.run(
            [binary, "-P", str(server.port), *where, *args], capture_output=True, timeout=30, input=stdin
        )

    return run


def test_devices_and_state(adb: Adb) -> None:
    listing = adb("devices", serial=None).stdout.decode()
    assert "emulator-5554\tdevice\nemulator-5556\tdevice" in listing
    assert "model:SimPhone" in adb("devices", "-l", serial=None).stdout.decode()
    assert adb("get-state").stdout.decode().strip() == "device"
    assert b"more than one device/emulator" in adb("shell", "echo", "hi", serial=None).stderr


def test_tap_from_a_uiautomator_dump_opens_clock(adb: Adb, server: AdbServer, tmp_path: Path) -> None:
    assert (
        adb("shell", "uiautomator", "dump", "/sdcard/ui.xml").stdout
        == b"UI hierchary dumped to: /sdcard/ui.xml\n"
    )
    local = tmp_path / "ui.xml"
    assert adb("pull", "/sdcard/ui.xml", str(local)).returncode == 0
    clock = next(e for e in parse_ui_xml(local.read_text()) if e.text == "Clock")
    assert adb("shell", "input", "tap", *map(str, clock.bounds.center)).returncode == 0
    assert server.shells["emulator-5554"].phone.current_focus()[0] == "com.android.deskclock"
    assert (
        "com.android.deskclock/com.android.deskclock.DeskClock}"
        in adb("shell", "dumpsys window").stdout.decode()
    )
    assert server.shells["emulator-5556"].phone.current_focus()[0] == "com.android.launcher3"


def test_exec_out_screencap_is_the_phone_png(adb: Adb, server: AdbServer) -> None:
    png = adb("exec-out", "screencap", "-p").stdout
    assert (
        png.startswith(b"\x89PNG\r\n\x1a\n") and png == server.shells["emulator-5554"].phone.screenshot_png()
    )


def test_push_pull_and_quoted_shell_arguments(adb: Adb, tmp_path: Path) -> None:
    source = tmp_path / "note.txt"
    source.write_text("pushed by adb\n")
    assert adb("push", str(source), "/sdcard/Download/sub/note.txt").returncode == 0
    assert adb("shell", "cat", "/sdcard/Download/sub/note.txt").stdout == b"pushed by adb\n"
    copy = tmp_path / "copy.txt"
    assert adb("pull", "/sdcard/Download/sub/note.txt", str(copy)).returncode == 0
    assert copy.read_text() == "pushed by adb\n"
    assert adb("shell", "echo '$(reboot); rm -rf /sdcard'").stdout == b"$(reboot); rm -rf /sdcard\n"
    assert adb("shell", "ls /sdcard/Download/sub").stdout == b"note.txt\n"


def test_unknown_command(adb: Adb) -> None:
    result = adb("shell", "frobnicate --now")  # shell_v2: the message on stderr, as on a phone
    assert result.stderr == b"/system/bin/sh: frobnicate: inaccessible or not found\n"
    assert result.returncode == 127 and result.stdout == b""


def test_exit_codes_and_stdin_over_shell_v2(adb: Adb) -> None:
    """Acceptance: `adb shell false; echo $?` prints 1; `printf 'echo hi\\n' | adb shell` returns."""
    assert adb("shell", "false").returncode == 1
    assert adb("shell", "true").returncode == 0
    assert adb("shell", "exit 3").returncode == 3
    assert adb("shell", "nosuch").returncode == 127
    tee = adb("shell", "-T", "echo", "hi")
    assert (tee.returncode, tee.stdout) == (0, b"hi\n")
    started = time.monotonic()
    piped = adb("shell", stdin=b"echo hi\n")
    assert (piped.returncode, piped.stdout) == (0, b"hi\n") and time.monotonic() - started < 5
    assert adb("shell", stdin=b"echo a\nexit 4\necho b\n").returncode == 4
    cat = adb("shell", "cat | grep -c x", stdin=b"x1\ny\nx2\n")
    assert (cat.returncode, cat.stdout) == (0, b"2\n")
    split = adb("shell", "echo out; ls /nope")
    assert (split.returncode, split.stdout, split.stderr) == (
        1,
        b"out\n",
        b"ls: /nope: No such file or directory\n",
    )
    tty = adb("shell", "-tt", "echo a")
    assert (tty.returncode, tty.stdout) == (0, b"a\r\n")


def test_non_finite_arguments_are_errors_not_crashes(adb: Adb) -> None:
    for line in (
        "input tap nan nan",
        "input swipe 1 1 inf 2",
        "sleep inf",
        "sleep 1e9",
        "mkdir -p " + "a/" * 3000,
    ):
        result = adb("shell", line)
        assert result.returncode != 0 and result.stderr, line
        assert b"internal error" not in result.stderr + result.stdout, line


def test_install_of_a_bad_file_fails(adb: Adb, tmp_path: Path) -> None:
    bad = tmp_path / "bad.apk"
    bad.write_bytes(b"not an apk")
    result = adb("install", str(bad))
    assert result.returncode != 0 and b"Failure [INSTALL_PARSE_FAILED_NOT_APK" in result.stdout
    assert adb("shell", "ls /data/local/tmp").stdout == b""  # adb removed its copy


def test_forward_list_is_empty(adb: Adb) -> None:
    result = adb("forward", "--list")
    assert result.returncode == 0 and result.stdout.strip() == b""


def test_swipe_takes_its_duration(adb: Adb, server: AdbServer) -> None:
    started = time.monotonic()
    assert adb("shell", "input swipe 540 1800 540 600 600").returncode == 0
    assert time.monotonic() - started >= 0.6
    assert server.shells["emulator-5554"].phone.apps["com.android.launcher3"].screen.name == "drawer"
