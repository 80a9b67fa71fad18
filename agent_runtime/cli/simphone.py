"""``agent-runtime simphone …``: virtual phones from the command line.

``simphone serve`` exposes SimPhones to any adb client (``adb -P PORT devices``, adbutils with
``ANDROID_ADB_SERVER_PORT``); ``simphone screenshot`` saves one screen as PNG. Other modules add
commands to the same group: ``from agent_runtime.cli.simphone import simphone_app`` then
``@simphone_app.command("tasks")`` (see :mod:`agent_runtime.cli.simphone_tasks`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agent_runtime.cli import guarded
from agent_runtime.errors import ConfigError

if TYPE_CHECKING:
    from agent_runtime.simphone import SimPhone

simphone_app = typer.Typer(
    name="simphone",
    help="SimPhone, the virtual Android phone: serve it over adb, take screenshots, list tasks.",
    no_args_is_help=True,
)

#: ``--devices`` limit: emulator serials run from emulator-5554 to emulator-5680.
MAX_DEVICES = 64


def _package_for(phone: SimPhone, app: str) -> str:
    """An app label (``Clock``) or package (``com.android.deskclock``) -> package."""
    packages = phone.packages()
    if app in packages:
        return app
    by_label = {label.lower(): pkg for pkg, label in packages.items()}
    if app.lower() in by_label:
        return by_label[app.lower()]
    raise ConfigError(f"SimPhone has no app {app!r}", hint=f"apps: {', '.join(sorted(packages.values()))}")


@simphone_app.command("serve")
@guarded
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (adb's default is 5037; 0 picks a free one).")
    ] = 5037,
    devices: Annotated[
        int, typer.Option("--devices", help=f"How many phones to serve (1-{MAX_DEVICES}).")
    ] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the first phone; phone i gets SEED+i.")] = 0,
    no_adb_keyboard: Annotated[
        bool, typer.Option("--no-adb-keyboard", help="Build the phones without ADB Keyboard installed.")
    ] = False,
) -> None:
    """Serve SimPhones over the adb protocol (serials emulator-5554, emulator-5556, …) until Ctrl-C."""
    if not 1 <= devices <= MAX_DEVICES:
        raise ConfigError(f"--devices {devices} is out of range", hint=f"serve 1 to {MAX_DEVICES} phones")
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is out of range")
    from agent_runtime.simphone import SimPhone
    from agent_runtime.simphone.adb import AdbServer

    phones = [SimPhone(seed + i, serial=f"emulator-{5554 + 2 * i}") for i in range(devices)]
    server = AdbServer(phones, host=host, port=port, adb_keyboard=not no_adb_keyboard)
    bound = server.port
    print(
        f"serving {devices} SimPhone(s) on {host}:{bound}: {', '.join(p.serial for p in phones)}", flush=True
    )
    print(f"  try: adb -P {bound} devices    (adbutils: ANDROID_ADB_SERVER_PORT={bound})", flush=True)
    try:
        server.serve_forever()
    finally:
        server.stop()


@simphone_app.command("screenshot")
@guarded
def screenshot(
    seed: Annotated[int, typer.Option("--seed", help="Phone seed (the same seed draws the same phone).")] = 0,
    app: Annotated[
        str | None, typer.Option("--app", help="Open this app first: label (Clock) or package name.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="PNG file to write (default: simphone-SEED[-APP].png).")
    ] = None,
    xml: Annotated[
        Path | None, typer.Option("--xml", help="Also write the screen's uiautomator XML here.")
    ] = None,
    width: Annotated[int, typer.Option("--width", help="Screen width in pixels.")] = 1080,
    height: Annotated[int, typer.Option("--height", help="Screen height in pixels.")] = 2400,
) -> None:
    """Save a SimPhone screen as PNG (the launcher, or an app's first screen with --app)."""
    from agent_runtime.simphone import SimPhone

    phone = SimPhone(seed, width=width, height=height)
    suffix = ""
    if app:
        package = _package_for(phone, app)
        phone.launch(package)
        suffix = "-" + phone.packages()[package].lower().replace(" ", "_")
    path = out or Path(f"simphone-{seed}{suffix}.png")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(phone.screenshot_png())
        if xml is not None:
            xml.parent.mkdir(parents=True, exist_ok=True)
            xml.write_text(phone.ui_xml(), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {exc.filename}: {exc.strerror}") from None
    print(f"wrote {path} ({width}x{height})" + (f" and {xml}" if xml is not None else ""))


def register(app: typer.Typer) -> None:
    app.add_typer(simphone_app, name="simphone")
