"""``screencap`` and ``uiautomator dump``: the two ways clients look at the screen."""

from __future__ import annotations

import io
import struct

from agent_runtime.simphone.adb.context import CommandFn, Context
from agent_runtime.simphone.adb.fs import FsError

DEFAULT_DUMP = "/sdcard/window_dump.xml"
#: HAL_DATASPACE_SRGB, the fourth field of the raw screencap header since Android 12.
_DATASPACE_SRGB = 0x8810000
_RGBA_8888 = 1


def _raw(png: bytes) -> bytes:
    """``screencap`` without ``-p``: a width/height/format/dataspace header, then RGBA pixels."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        rgba = image.convert("RGBA")
        header = struct.pack("<4I", rgba.width, rgba.height, _RGBA_8888, _DATASPACE_SRGB)
        return header + rgba.tobytes()


def screencap(ctx: Context, args: list[str]) -> int:
    png_flag = False
    path: str | None = None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "-p":
            png_flag = True
        elif arg == "-d" and rest:
            rest.pop(0)
        elif arg == "-h":
            ctx.print(
                "usage: screencap [-hp] [-d display-id] [FILENAME]\n   -h: this message\n"
                "   -p: save the file as a png.\nIf FILENAME ends with .png it will be saved as a png.\n"
                "If FILENAME is not given, the results will be printed to stdout."
            )
            return 0
        elif not arg.startswith("-"):
            path = arg
    png = ctx.device.phone.screenshot_png()
    as_png = png_flag or (path is not None and path.endswith(".png"))
    data = png if as_png else _raw(png)
    if path is None:
        ctx.stdout += data
        return 0
    try:
        ctx.write_file(path, data)
    except FsError as exc:
        ctx.error(f"Error opening file: {path} ({exc})")
        return 1
    return 0


def uiautomator(ctx: Context, args: list[str]) -> int:
    if not args or args[0] != "dump":
        ctx.print(
            "Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\n"
            "dump: creates an XML dump of current UI hierarchy"
        )
        return 1
    paths = [a for a in args[1:] if not a.startswith("-")]
    path = paths[0] if paths else DEFAULT_DUMP
    xml = ctx.device.phone.ui_xml()
    try:
        ctx.write_file(path, xml.encode("utf-8"))
    except FsError as exc:
        ctx.error(f"ERROR: could not write {path}: {exc}")
        return 1
    ctx.print(f"UI hierchary dumped to: {path}")  # sic: Android's spelling, which clients match on
    return 0


COMMANDS: dict[str, CommandFn] = {"screencap": screencap, "uiautomator": uiautomator}
