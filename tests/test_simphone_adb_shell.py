"""SimPhone's shell emulator, run in-process on a real SimPhone: parsing, commands, Android's texts.

The shell never runs a real shell: these tests pin the parts an injection would need (quoting,
``$(…)``, backticks, operators inside quotes) and the Android behaviour clients depend on.
"""

from __future__ import annotations

import base64
import shlex

import pytest

from agent_runtime.observation import parse_ui_xml
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.adb import AndroidShell
from agent_runtime.simphone.adb.cmdline import ShellSyntaxError, parse, words

NOTES = "com.simphone.notes"
ADB_IME = "com.android.adbkeyboard/.AdbIME"


@pytest.fixture()
def shell() -> AndroidShell:
    return AndroidShell(SimPhone(0))


def out(shell: AndroidShell, line: str) -> str:
    return shell.run(line).output.decode()


def focus_search(shell: AndroidShell) -> None:
    """Open Notes and focus its search box (a plain single-line EditText)."""
    shell.phone.launch(NOTES)
    shell.phone.tap_on("Search notes")
    assert shell.phone.focused_field() is not None


def field_text(shell: AndroidShell, resource_id: str = f"{NOTES}:id/search_box") -> str:
    return next(e.text for e in parse_ui_xml(shell.phone.ui_xml()) if e.resource_id == resource_id)


# -- parsing -----------------------------------------------------------------------------------------


def test_quotes_keep_operators_and_substitutions_literal() -> None:
    pipelines = parse("echo 'a; b' \"c && d\" e\\;f; echo `id` $(reboot) | grep x")
    assert [len(p.commands) for p in pipelines] == [1, 2]
    args, redirects = words(pipelines[0].commands[0], 0)
    assert args == ["echo", "a; b", "c && d", "e;f"] and redirects == []
    assert words(pipelines[1].commands[0], 0)[0] == ["echo", "`id`", "$(reboot)"]


def test_redirections_and_status_expansion() -> None:
    [pipeline] = parse("cmd a 2>/dev/null b >> '/sdcard/x y' 2>&1; ")
    args, redirects = words(pipeline.commands[0], 7)
    assert args == ["cmd", "a", "b"]
    assert [(r.fd, r.op, r.target) for r in redirects] == [
        (2, ">", "/dev/null"),
        (1, ">>", "/sdcard/x y"),
        (2, ">&", "1"),
    ]
    [pipeline] = parse("echo $? '$?' \"$?\" \\$?")
    assert words(pipeline.commands[0], 7)[0] == ["echo", "7", "$?", "7", "$?"]


@pytest.mark.parametrize("line", ["; ls", "ls &&", "ls | | ls", "echo 'open", 'echo "open', "echo >"])
def test_syntax_errors_run_nothing(shell: AndroidShell, line: str) -> None:
    with pytest.raises(ShellSyntaxError):
        for pipeline in parse(line):
            for command in pipeline.commands:
                words(command, 0)
    result = shell.run(f"touch /sdcard/ran; {line}")
    assert result.status == 1 and b"syntax error" in result.output
    assert not shell.fs.exists("/sdcard/ran")


# -- the interpreter ---------------------------------------------------------------------------------


def test_chaining_follows_exit_statuses(shell: AndroidShell) -> None:
    assert out(shell, "false && echo no || echo yes; echo $?") == "yes\n0\n"
    assert out(shell, "true || echo no; false; echo $?") == "1\n"
    assert shell.run("true && false").status == 1


def test_unknown_command_answers_like_android(shell: AndroidShell) -> None:
    result = shell.run("reboot now")
    assert result.status == 127
    assert result.output == b"/system/bin/sh: reboot: inaccessible or not found\n"
    assert out(shell, "nosuch; echo $?").endswith("127\n")


def test_substitutions_are_text_never_commands(shell: AndroidShell) -> None:
    assert out(shell, "echo $(rm -rf /sdcard) `reboot` ${HOME}") == "$(rm -rf /sdcard) `reboot` ${HOME}\n"
    assert out(shell, "echo '; rm -rf /sdcard; echo pwned'") == "; rm -rf /sdcard; echo pwned\n"


def test_pipes_redirections_and_files(shell: AndroidShell) -> None:
    assert (
        out(shell, "echo hello > /sdcard/a.txt; echo world >> /sdcard/a.txt; cat /sdcard/a.txt")
        == "hello\nworld\n"
    )
    assert out(shell, "cat /sdcard/a.txt | grep -c o") == "2\n"
    assert out(shell, "cat /sdcard/a.txt | grep -v hello | head -n 1") == "world\n"
    assert out(shell, "cat /storage/emulated/0/a.txt") == "hello\nworld\n"  # the same folder as /sdcard
    assert out(shell, "cat /sdcard/none") == "cat: /sdcard/none: No such file or directory\n"
    assert out(shell, "cat /sdcard/none 2>/dev/null; echo $?") == "1\n"
    assert out(shell, "ls /sdcard/none 2>&1 | grep -c 'No such file'") == "1\n"
    assert shell.run("echo x > /no/dir/file").status == 1
    assert out(shell, "rm /sdcard/a.txt && ls /sdcard | grep -c a.txt") == "0\n"
    assert shell.run("rm /sdcard/a.txt").status == 1 and shell.run("rm -f /sdcard/a.txt").status == 0


def test_rm_rf_sdcard_empties_it_but_the_mount_stays(shell: AndroidShell) -> None:
    shell.run("mkdir -p /sdcard/x/y && echo 1 > /sdcard/x/y/f")
    result = shell.run("rm -rf /sdcard")
    assert result.status == 1 and b"Permission denied" in result.output
    assert shell.fs.is_dir("/sdcard") and not shell.fs.exists("/sdcard/x")


# -- input -------------------------------------------------------------------------------------------


def test_input_text_types_into_the_focused_field(shell: AndroidShell) -> None:
    focus_search(shell)
    assert shell.run("input text 'hello%sworld'").status == 0
    assert shell.run(f"input text {shlex.quote('; rm -rf /sdcard; echo pwned')}").status == 0
    assert shell.run(f"input keyboard text {shlex.quote('$(reboot)')}").status == 0
    assert field_text(shell) == "hello world; rm -rf /sdcard; echo pwned$(reboot)"
    assert shell.fs.is_dir("/sdcard/Download")


def test_input_text_outside_the_charmap_fails_like_android(shell: AndroidShell) -> None:
    focus_search(shell)
    result = shell.run("input text 'ab漢字'")
    assert result.status == 255
    assert result.output.decode() == (
        "Exception occurred while executing 'text':\n"
        "java.lang.NullPointerException: Attempt to get length of null array\n"
    )
    assert field_text(shell) == "Search notes"  # nothing typed: the placeholder still shows


def test_input_errors_and_keyevents(shell: AndroidShell) -> None:
    assert b"NumberFormatException" in shell.run("input tap x 5").output
    assert shell.run("input tap 5").status == 255
    assert b"Unknown keycode: WARP" in shell.run("input keyevent WARP").output
    assert shell.run("input frobnicate").status == 1
    focus_search(shell)
    assert shell.run("input keyevent KEYCODE_H 33 KEYCODE_SPACE 8 DEL").status == 0
    assert field_text(shell) == "he "
    shell.run("/system/bin/input keyevent KEYCODE_HOME")
    assert shell.phone.current_focus()[0] == "com.android.launcher3"


def test_tap_and_motion_events_open_clock(shell: AndroidShell) -> None:
    clock = shell.phone.find("Clock")
    assert clock is not None
    x, y = clock.bounds.center
    assert shell.run(f"input motionevent DOWN {x} {y} && input motionevent UP {x} {y}").status == 0
    assert shell.phone.current_focus() == ("com.android.deskclock", "com.android.deskclock.DeskClock")


# -- ADB Keyboard and ime ----------------------------------------------------------------------------


def test_adb_keyboard_types_only_once_selected(shell: AndroidShell) -> None:
    focus_search(shell)
    text = "起床 ☕ $(reboot) `id` ; rm -rf /sdcard"
    b64 = f"am broadcast -a ADB_INPUT_B64 --es msg {base64.b64encode(text.encode()).decode()}"
    assert out(shell, b64).splitlines() == [
        "Broadcasting: Intent { act=ADB_INPUT_B64 flg=0x400000 (has extras) }",
        "Broadcast completed: result=0",
    ]
    assert field_text(shell) == "Search notes"  # delivered to no one
    assert "Unknown input method" in out(shell, f"ime set {ADB_IME}")  # not enabled yet
    assert out(shell, f"ime enable {ADB_IME}") == f"Input method {ADB_IME}: now enabled for user #0\n"
    assert out(shell, f"ime set {ADB_IME}") == f"Input method {ADB_IME} selected for user #0\n"
    assert out(shell, "settings get secure default_input_method") == ADB_IME + "\n"
    assert out(shell, "ime list -s") == f"com.android.inputmethod.latin/.LatinIME\n{ADB_IME}\n"
    shell.run(b64)
    shell.run(f"am broadcast -a ADB_INPUT_TEXT --es msg {shlex.quote(' 🙂 ok')}")
    assert field_text(shell) == text + " 🙂 ok"
    shell.run("am broadcast -a ADB_CLEAR_TEXT")
    assert field_text(shell) == "Search notes"
    shell.run(f"ime disable {ADB_IME}")
    assert (
        out(shell, "settings get secure default_input_method") == "com.android.inputmethod.latin/.LatinIME\n"
    )


def test_phone_without_adb_keyboard() -> None:
    shell = AndroidShell(SimPhone(0), adb_keyboard=False)
    assert out(shell, "ime list -a -s") == "com.android.inputmethod.latin/.LatinIME\n"
    result = shell.run(f"ime enable {ADB_IME}")
    assert result.status == 255 and b"Unknown input method" in result.output
    assert "com.android.adbkeyboard" not in out(shell, "pm list packages")


# -- activities and system services ------------------------------------------------------------------


def test_am_start_monkey_and_dumpsys(shell: AndroidShell) -> None:
    assert out(shell, "am start -n com.android.settings/.Settings") == (
        "Starting: Intent { cmp=com.android.settings/.Settings }\n"
    )
    assert "mCurrentFocus=Window{" in out(shell, "dumpsys window windows")
    focus = out(shell, "dumpsys window | grep mCurrentFocus")
    assert focus.strip().endswith(" u0 com.android.settings/com.android.settings.Settings}")
    assert "mResumedActivity: ActivityRecord{" in out(shell, "dumpsys activity activities")
    result = shell.run("am start -n com.android.settings/.Nope")
    assert (
        result.status == 1 and b"Activity class {com.android.settings/.Nope} does not exist." in result.output
    )
    shell.run("am start -a android.intent.action.MAIN -c android.intent.category.HOME")
    assert shell.phone.current_focus()[0] == "com.android.launcher3"
    assert "Events injected: 1" in out(
        shell, "monkey -p com.android.deskclock -c android.intent.category.LAUNCHER 1"
    )
    assert shell.phone.current_focus()[0] == "com.android.deskclock"
    result = shell.run("monkey -p com.example.none -c android.intent.category.LAUNCHER 1")
    assert result.status == 252 and b"No activities found to run, monkey aborted." in result.output
    shell.run("am force-stop com.android.deskclock")
    assert shell.phone.current_focus()[0] == "com.android.launcher3"


def test_view_intent_opens_the_url_in_browser(shell: AndroidShell) -> None:
    url = "https://recipes.sim/tomato-soup"
    assert shell.run(f"am start -a android.intent.action.VIEW -d {url}").status == 0
    assert shell.phone.current_focus()[0] == "com.android.browser"
    assert shell.phone.app("com.android.browser").state.current_url == url
    assert shell.run("am start -a android.intent.action.DIAL").status == 1


def test_screen_size_properties_settings_packages(shell: AndroidShell) -> None:
    assert out(shell, "wm size") == "Physical size: 1080x2400\n"
    assert "orientation=0" in out(shell, "dumpsys display | grep -E 'mCurrentOrientation|orientation='")
    assert (
        out(shell, "getprop ro.product.model; getprop sys.boot_completed; getprop no.such")
        == "SimPhone\n1\n\n"
    )
    assert (
        out(shell, "settings put system screen_brightness 42 && settings get system screen_brightness")
        == "42\n"
    )
    assert out(shell, "settings get global no_such_key") == "null\n"
    third_party = out(shell, "pm list packages -3").split()
    simphone_apps = "email expenses files gallery maps music notes recorder shop weather".split()
    assert third_party == [f"package:com.simphone.{app}" for app in simphone_apps]
    assert "package:com.android.deskclock" in out(shell, "pm list packages")


def test_screencap_and_uiautomator_write_files(shell: AndroidShell) -> None:
    png = shell.phone.screenshot_png()
    assert shell.run("screencap -p").output == png
    assert shell.run("screencap /sdcard/s.png").status == 0 and shell.fs.read("/sdcard/s.png") == png
    raw = shell.run("screencap").output
    assert len(raw) == 16 + 1080 * 2400 * 4 and raw[:8] == (1080).to_bytes(4, "little") + (2400).to_bytes(
        4, "little"
    )
    line = "rm -f /data/local/tmp/uidump.xml; uiautomator dump /data/local/tmp/uidump.xml && echo success"
    assert out(shell, line) == "UI hierchary dumped to: /data/local/tmp/uidump.xml\nsuccess\n"
    assert shell.fs.read("/data/local/tmp/uidump.xml").decode() == shell.phone.ui_xml()
    result = shell.run("uiautomator dump /nonexistent/dir/dump.xml")
    assert result.status == 1 and result.output.startswith(b"ERROR: could not write")
    assert out(shell, "uiautomator dump /dev/tty").startswith("<?xml")


# -- exit codes, bad numbers, the commands real clients call -----------------------------------------


def test_exit_and_assignments_and_dev_null(shell: AndroidShell) -> None:
    assert shell.run("false").status == 1 and shell.run("true").status == 0
    result = shell.run("echo a; exit 3; echo b")
    assert (result.output, result.status, result.exited) == (b"a\n", 3, True)
    assert shell.run("false; exit").status == 1
    assert out(shell, "ANDROID_LOG_TAGS='*:s' LANG=C echo hi") == "hi\n"
    assert shell.run("FOO=bar").status == 0
    assert out(shell, "cat </dev/null; echo $?") == "0\n"
    assert out(shell, "sh -c 'echo a; exit 4'; echo $?") == "a\n4\n"
    split = shell.run("echo out; ls /nope")
    assert (split.stdout, split.stderr) == (b"out\n", b"ls: /nope: No such file or directory\n")


@pytest.mark.parametrize(
    "line",
    [
        "input tap nan nan",
        "input tap 1e300 5",
        "input swipe 1 1 inf 2",
        "input swipe 1 1 2 2 1e12",
        "input keyevent --duration inf 3",
        "sleep inf",
        "sleep 1e9",
        "sleep nan",
        "head -n 1e9",
        "dumpsys battery set level inf",
        "mkdir -p " + "a/" * 3000,
        "mkdir -p /sdcard/" + "x" * 300,
    ],
)
def test_absurd_numbers_are_clean_errors(shell: AndroidShell, line: str) -> None:
    result = shell.run(line)
    assert result.status != 0 and result.stderr and not result.stdout
    assert b"internal error" not in result.output and b"Traceback" not in result.output


def test_deep_mkdir_within_path_max(shell: AndroidShell) -> None:
    deep = "/sdcard/" + "/".join(["d"] * 1500)
    assert shell.run(f"mkdir -p {deep} && touch {deep}/f").status == 0
    assert shell.fs.exists(deep + "/f")


def test_cmd_statusbar_package_and_unknown_services(shell: AndroidShell) -> None:
    assert shell.run("cmd statusbar expand-notifications").status == 0
    assert "mExpandedVisible=true" in out(shell, "dumpsys statusbar")
    assert shell.run("cmd statusbar collapse").status == 0 and shell.statusbar == "collapsed"
    assert out(shell, "cmd package list packages -3") == out(shell, "pm list packages -3")
    result = shell.run("cmd frobnicator do")
    assert (result.status, result.stderr) == (20, b"cmd: Can't find service: frobnicator\n")
    assert shell.run("cmd statusbar warp").status == 255
    shell.run("cmd activity start -n com.android.deskclock/.DeskClock")
    assert shell.phone.current_focus()[0] == "com.android.deskclock"


def test_ps_and_pidof_follow_running_apps(shell: AndroidShell) -> None:
    assert out(shell, "pidof com.android.deskclock; echo $?") == "1\n"
    shell.run("monkey -p com.android.deskclock -c android.intent.category.LAUNCHER 1")
    pid = out(shell, "pidof com.android.deskclock").strip()
    assert pid.isdigit() and f"pid={pid}" in out(shell, "dumpsys activity top")
    listing = out(shell, "ps -A").splitlines()
    assert listing[0].split() == ["USER", "PID", "PPID", "VSZ", "RSS", "WCHAN", "ADDR", "S", "NAME"]
    assert any(line.split()[1] == pid and line.endswith("com.android.deskclock") for line in listing)
    assert "system_server" in out(shell, "ps -A | grep system_server")
    assert "system_server" not in out(shell, "ps")  # without -A: only the shell's own processes
    assert out(shell, "ps -A -o PID,NAME | grep deskclock").split() == [pid, "com.android.deskclock"]
    shell.run("am force-stop com.android.deskclock")
    assert shell.run("pidof com.android.deskclock").status == 1
    assert shell.run("ps -o BOGUS").status == 1


def test_content_settings_agree_with_settings(shell: AndroidShell) -> None:
    shell.run("settings put system screen_brightness 77")
    query = "content query --uri content://settings/system --where \"name='screen_brightness'\""
    assert out(shell, query) == "Row: 0 _id=3, name=screen_brightness, value=77\n"
    assert out(shell, f"{query} --projection value") == "Row: 0 value=77\n"
    insert = "content insert --uri content://settings/global --bind name:s:stay_on --bind value:i:3"
    assert shell.run(insert).status == 0
    assert out(shell, "settings get global stay_on") == "3\n"
    assert "name=android_id" in out(shell, "content query --uri content://settings/secure")
    assert out(shell, "content query --uri content://settings/global/nope") == "No result found.\n"
    assert shell.run("content query --uri content://contacts/people").status == 1


def test_date_reads_the_status_bar_clock(shell: AndroidShell) -> None:
    now = shell.phone.now
    assert out(shell, "date +%H:%M") == now.strftime("%H:%M\n")
    assert out(shell, "date") == now.strftime("%a %b %e %H:%M:%S UTC %Y\n")
    clock = next(e.text for e in parse_ui_xml(shell.phone.ui_xml()) if e.resource_id.endswith(":id/clock"))
    assert clock == f"{now.hour % 12 or 12}:{now.minute:02d}"
    assert shell.run("date -s 20250101").status == 1


def test_dumpsys_battery_and_package(shell: AndroidShell) -> None:
    battery = out(shell, "dumpsys battery")
    assert f"  level: {shell.phone.battery}\n" in battery and "AC powered: false" in battery
    assert shell.run("dumpsys battery set level 12").status == 0
    assert "12%" in [e.text for e in parse_ui_xml(shell.phone.ui_xml())]  # the status bar agrees
    shell.run("dumpsys battery reset")
    package = out(shell, "dumpsys package com.simphone.notes")
    assert "versionName=1.4.2" in package and "versionCode=10402 " in package
    assert "versionName=" in out(shell, "dumpsys package com.android.settings")


def test_swipe_in_place_is_a_long_press_that_opens_the_shortcut_menu(shell: AndroidShell) -> None:
    clock = shell.phone.find("Clock")
    assert clock is not None
    x, y = clock.bounds.center
    assert shell.run(f"input swipe {x} {y} {x} {y} 600").status == 0
    texts = [e.text for e in parse_ui_xml(shell.phone.ui_xml())]
    assert {"Open", "App info"} <= set(texts)
    shell.phone.tap_on("App info")
    assert "com.android.deskclock" in [e.text for e in parse_ui_xml(shell.phone.ui_xml())]
    shell.phone.back()
    shell.run(f"input swipe {x} {y} {x} {y} 600")
    shell.phone.tap_on("Open")
    assert shell.phone.current_focus()[0] == "com.android.deskclock"


def test_pm_install_of_a_bad_file_fails(shell: AndroidShell) -> None:
    shell.fs.write("/data/local/tmp/bad.apk", b"not a zip")
    result = shell.run("pm install /data/local/tmp/bad.apk")
    assert result.status == 1 and b"Failure [INSTALL_PARSE_FAILED_NOT_APK" in result.output
    assert shell.run("pm install /data/local/tmp/none.apk").status == 1
