"""SimPhone's adb endpoint through unmodified adbutils: the host protocol, shell, sync, acceptance.

Every test serves real SimPhones on an ephemeral port. ``ADBUTILS_ADB_PATH=/bin/true`` makes sure
adbutils never starts a real adb server from its bundled binary.
"""

from __future__ import annotations

import base64
import io
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from agent_runtime.observation import parse_ui_xml
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.adb import AdbServer

CLOCK = "com.android.deskclock"
NOTES = "com.simphone.notes"
SEARCH_BOX = f"{NOTES}:id/search_box"
ADB_IME = "com.android.adbkeyboard/.AdbIME"
LATIN_IME = "com.android.inputmethod.latin/.LatinIME"


@pytest.fixture(autouse=True)
def _no_real_adb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADBUTILS_ADB_PATH", "/bin/true")


@pytest.fixture()
def server() -> Iterator[AdbServer]:
    phones = [SimPhone(0, serial="emulator-5554"), SimPhone(1, serial="emulator-5556")]
    with AdbServer(phones) as srv:
        yield srv


@pytest.fixture()
def client(server: AdbServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(server.port))
    import adbutils

    return adbutils.AdbClient(host="127.0.0.1", port=server.port)


@pytest.fixture()
def device(client: Any) -> Any:
    return client.device("emulator-5554")


def phone_of(server: AdbServer, serial: str = "emulator-5554") -> SimPhone:
    return server.shells[serial].phone


def node(xml: str, *, text: str | None = None, rid: str | None = None) -> Any:
    return next(
        e
        for e in parse_ui_xml(xml)
        if (text is None or e.text == text) and (rid is None or e.resource_id == rid)
    )


def focus_search_box(device: Any) -> None:
    device.app_start(NOTES)
    x, y = node(device.dump_hierarchy(), rid=SEARCH_BOX).bounds.center
    device.click(x, y)


def raw_request(port: int, *requests: str) -> bytes:
    """Send host-protocol requests on one socket and read everything until the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        for request in requests:
            sock.sendall(f"{len(request):04x}{request}".encode())
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


# -- host services -----------------------------------------------------------------------------------


def test_version_and_device_lists(client: Any) -> None:
    assert client.server_version() == 41
    assert [(d.serial, d.state) for d in client.list()] == [
        ("emulator-5554", "device"),
        ("emulator-5556", "device"),
    ]
    tags = client.list(extended=True)[1].tags
    assert tags == {"product": "simphone", "model": "SimPhone", "device": "simphone", "transport_id": "2"}
    assert [d.serial for d in client.device_list()] == ["emulator-5554", "emulator-5556"]


def test_features_offer_shell_v2_but_not_stat_v2(device: Any) -> None:
    features = device.get_features().split(",")
    assert "shell_v2" in features and "stat_v2" not in features and "cmd" not in features
    assert device.get_state() == "device" and device.get_serialno() == "emulator-5554"


def test_shell2_exit_codes_over_v1_and_v2(device: Any) -> None:
    for v2 in (False, True):
        assert device.shell2("false", v2=v2).returncode == 1
        assert device.shell2("true", v2=v2).returncode == 0
        missing = device.shell2("nosuch-command", v2=v2)
        assert missing.returncode == 127 and "inaccessible or not found" in missing.output
        bad = device.shell2("input tap nan nan", v2=v2)
        assert bad.returncode == 255 and "NumberFormatException" in bad.output
    split = device.shell2("echo out; echo err >&2; exit 3", v2=True)
    assert (split.returncode, split.stdout, split.stderr) == (3, "out\n", "err\n")


def v2_session(port: int, service: str, *packets: tuple[int, bytes]) -> tuple[bytes, bytes, int]:
    """Run a shell,v2 service on a raw socket: send stdin packets, return (stdout, stderr, exit code)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        for request in ("host:transport:emulator-5554", service):
            sock.sendall(f"{len(request):04x}{request}".encode())
        for kind, data in packets:
            sock.sendall(bytes([kind]) + len(data).to_bytes(4, "little") + data)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"OKAYOKAY")
    data, streams, status = data[8:], {1: b"", 2: b""}, -1
    while data:
        kind, length = data[0], int.from_bytes(data[1:5], "little")
        body, data = data[5 : 5 + length], data[5 + length :]
        if kind == 3:
            status = body[0]
        else:
            streams[kind] += body
    return streams[1], streams[2], status


def test_shell_v2_protocol_stdin_and_sessions(server: AdbServer) -> None:
    port = server.port
    assert v2_session(port, "shell,v2,raw:false") == (b"", b"", 1)
    assert v2_session(port, "shell,v2,raw:cat | grep b", (0, b"a\nb"), (0, b"c\n"), (4, b"")) == (
        b"bc\n",
        b"",
        0,
    )
    script = (0, b"echo one\nfalse\necho $?; ls /nope\necho tw"), (0, b"o"), (5, b"24x80,0x0\0"), (4, b"")
    assert v2_session(port, "shell,v2,TERM=xterm,raw:", *script) == (
        b"one\n1\ntwo\n",
        b"ls: /nope: No such file or directory\n",
        0,
    )
    assert v2_session(port, "shell,v2,raw:", (0, b"exit 7\necho never\n"))[2] == 7
    out, _, status = v2_session(port, "shell,v2,TERM=xterm,pty:", (0, b"echo hi\rexit 5\r"))
    assert status == 5 and out.startswith(b"simphone:/ $ ") and b"\r\nhi\r\nsimphone:/ $ exit 5" in out
    assert v2_session(port, "shell,v2,pty:echo a; echo b") == (b"a\r\nb\r\n", b"", 0)


def test_transport_errors(server: AdbServer, client: Any) -> None:
    import adbutils

    with pytest.raises(adbutils.AdbError, match="device 'emulator-9999' not found"):
        client.device("emulator-9999").shell("echo hi")
    assert raw_request(server.port, "host:tport:any") == b"FAIL001dmore than one device/emulator"
    assert raw_request(server.port, "host:nonsense").startswith(b"FAIL")
    assert raw_request(server.port, "host:host-features").startswith(b"OKAY")  # needs no device
    reply = raw_request(server.port, "host:tport:serial:emulator-5556", "shell:getprop ro.serialno")
    assert reply == b"OKAY" + (2).to_bytes(8, "little") + b"OKAY" + b"emulator-5556\n"
    assert raw_request(server.port, "host:transport-id:1", "shell:echo one") == b"OKAYOKAYone\n"
    # the legacy stream stays exactly as it was: no framing, stderr interleaved, no exit code
    assert raw_request(server.port, "host:transport-id:1", "shell:echo a; ls /nope; false") == (
        b"OKAYOKAYa\nls: /nope: No such file or directory\n"
    )
    assert raw_request(server.port, "host:list-forward") == b"OKAY0000"
    assert raw_request(server.port, "host-serial:emulator-5554:list-forward") == b"OKAY0000"


# -- shell over the wire -----------------------------------------------------------------------------


def test_shell_screen_size_focus_and_exit_codes(device: Any, server: AdbServer) -> None:
    assert device.shell("echo hello") == "hello"
    assert tuple(device.window_size()) == (1080, 2400)
    app = device.app_current()
    assert (app.package, app.activity) == phone_of(server).current_focus()
    result = device.shell2("nosuch-command")  # v1 shell: adbutils appends `; echo X4EXIT:$?`
    assert result.returncode == 127 and "inaccessible or not found" in result.output
    assert device.shell2("true && echo ok").returncode == 0


def test_screenshot_and_dump_match_the_phone(device: Any, server: AdbServer) -> None:
    image = device.screenshot()
    phone = phone_of(server)
    assert image.size == (1080, 2400)
    assert image.tobytes() == Image.open(io.BytesIO(phone.screenshot_png())).convert("RGB").tobytes()
    assert device.dump_hierarchy() == phone.ui_xml()


def test_tap_on_the_clock_icon_opens_clock(device: Any, server: AdbServer) -> None:
    clock = node(device.dump_hierarchy(), text="Clock")
    device.click(*clock.bounds.center)
    assert device.app_current().package == CLOCK
    assert phone_of(server).current_focus()[0] == CLOCK
    assert f"{CLOCK}/{CLOCK}.DeskClock}}" in device.shell("dumpsys window | grep mCurrentFocus")


def test_typed_text_lands_in_the_focused_field(device: Any, server: AdbServer) -> None:
    focus_search_box(device)
    device.send_keys("hello world")  # adbutils sends `input text 'hello world'`
    assert node(device.dump_hierarchy(), rid=SEARCH_BOX).text == "hello world"
    assert "mInputShown=true" in device.shell("dumpsys input_method")
    device.keyevent("KEYCODE_BACK")  # first Back hides the keyboard
    assert "mInputShown=false" in device.shell("dumpsys input_method")
    assert device.app_current().package == NOTES


INJECTIONS = [
    "; rm -rf /sdcard; echo pwned",
    "$(reboot)",
    "`reboot` && rm -rf / || echo pwned",
    "a'b\"c\\d %s",
]


def test_injections_land_literally_via_input_text_and_adb_keyboard(device: Any, server: AdbServer) -> None:
    device.sync.push(b"keep me", "/sdcard/Download/keep.txt")
    focus_search_box(device)
    typed = ""
    for text in INJECTIONS:
        output = device.shell(["input", "text", text.replace(" ", "%s")])  # list args: adbutils quotes them
        assert "pwned" not in output
        typed += text.replace("%s", " ")
    assert node(device.dump_hierarchy(), rid=SEARCH_BOX).text == typed

    device.shell(["ime", "enable", ADB_IME])
    device.shell(["ime", "set", ADB_IME])
    for text in [*INJECTIONS, "起床 ☕ 🙂"]:
        payload = base64.b64encode(text.encode()).decode()
        assert device.shell(f"am broadcast -a ADB_INPUT_B64 --es msg {payload}").endswith("result=0")
        typed += text
    assert node(device.dump_hierarchy(), rid=SEARCH_BOX).text == typed
    assert device.sync.read_text("/sdcard/Download/keep.txt") == "keep me"
    assert server.shells["emulator-5554"].fs.is_dir("/sdcard/Download")


def test_cjk_through_input_text_fails_like_android(device: Any) -> None:
    focus_search_box(device)
    result = device.shell2(["input", "text", "你好"])
    assert result.returncode == 255
    assert "java.lang.NullPointerException" in result.output
    assert node(device.dump_hierarchy(), rid=SEARCH_BOX).text == "Search notes"


def test_unknown_command_text(device: Any) -> None:
    assert device.shell("rmdir_everything /") == "/system/bin/sh: rmdir_everything: inaccessible or not found"


def test_apps_keys_and_packages(device: Any, server: AdbServer) -> None:
    device.app_start("com.android.settings")
    assert device.app_current().package == "com.android.settings"
    device.app_start(CLOCK, f"{CLOCK}.DeskClock")
    assert device.app_current().package == CLOCK
    device.keyevent("HOME")
    assert device.app_current().package == "com.android.launcher3"
    assert {NOTES, CLOCK, "com.android.adbkeyboard"} <= set(device.list_packages())
    assert device.prop.model == "SimPhone" and device.getprop("ro.build.version.sdk") == "34"
    device.app_start(CLOCK)
    device.app_stop(CLOCK)
    assert phone_of(server).current_focus()[0] == "com.android.launcher3"


# -- sync --------------------------------------------------------------------------------------------


def test_sync_push_pull_stat_list(device: Any, tmp_path: Any) -> None:
    pushed = bytes(range(256)) * 700  # > one 64 KiB DATA chunk
    assert device.sync.push(pushed, "/sdcard/Pictures/new/blob.bin") == len(pushed)
    info = device.sync.stat("/sdcard/Pictures/new/blob.bin")
    assert info.size == len(pushed) and info.mode & 0o100000
    assert not device.sync.exists("/sdcard/none.txt")
    assert device.sync.read_bytes("/sdcard/Pictures/new/blob.bin") == pushed
    names = {f.path for f in device.sync.list("/sdcard")}
    assert {"Download", "Pictures"} <= names
    device.shell("screencap -p /sdcard/shot.png")
    target = tmp_path / "shot.png"
    device.sync.pull("/sdcard/shot.png", target)
    assert Image.open(target).size == (1080, 2400)
    import adbutils

    with pytest.raises(adbutils.AdbError, match="No such file"):
        device.sync.read_bytes("/sdcard/none.txt")


# -- server behaviour --------------------------------------------------------------------------------


def test_phones_are_served_concurrently(client: Any, server: AdbServer) -> None:
    errors: list[BaseException] = []

    def work(serial: str, package: str) -> None:
        try:
            dev = client.device(serial)
            for _ in range(5):
                dev.app_start(package)
                assert dev.app_current().package == package
                dev.keyevent("HOME")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=("emulator-5554", CLOCK)),
        threading.Thread(target=work, args=("emulator-5556", NOTES)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors


def test_interactive_shell_echoes_and_runs_lines(server: AdbServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        for request in ("host:transport:emulator-5556", "shell:"):
            sock.sendall(f"{len(request):04x}{request}".encode())
        sock.sendall(b"echo hj\x7fi\x1b[A\rexit\r")
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
    assert data.startswith(b"OKAYOKAYsimphone:/ $ ")
    assert b"\r\nhi\r\nsimphone:/ $ exit\r\n" in data


def test_phone_state_outlives_a_server_restart() -> None:
    import adbutils

    phone = SimPhone(0)
    with AdbServer([phone]) as first:
        device = adbutils.AdbClient(host="127.0.0.1", port=first.port).device(phone.serial)
        device.sync.push(b"still here", "/sdcard/Download/kept.txt")
        device.shell(["ime", "enable", ADB_IME])
        device.shell(["ime", "set", ADB_IME])
    with AdbServer([phone]) as second:
        device = adbutils.AdbClient(host="127.0.0.1", port=second.port).device(phone.serial)
        assert device.sync.read_text("/sdcard/Download/kept.txt") == "still here"
        assert device.shell("settings get secure default_input_method") == ADB_IME
    with AdbServer([phone], adb_keyboard=False) as third:  # ADB Keyboard uninstalled
        device = adbutils.AdbClient(host="127.0.0.1", port=third.port).device(phone.serial)
        assert device.shell("settings get secure default_input_method") == LATIN_IME
        assert "com.android.adbkeyboard" not in device.list_packages()


def test_kill_stops_the_server_and_bad_ports_are_clear_errors() -> None:
    from agent_runtime.errors import ConfigError, DeviceError

    srv = AdbServer([SimPhone(0)]).start()
    port = srv.port
    assert raw_request(port, "host:kill") == b"OKAY"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the server still accepts connections after host:kill")
    with AdbServer([SimPhone(0)]) as first, pytest.raises(DeviceError, match="cannot listen"):
        AdbServer([SimPhone(1)], port=first.port).start()
    with pytest.raises(ConfigError, match="share the serial"):
        AdbServer([SimPhone(0), SimPhone(1)])
