"""A small Tk app the desktop driver tests act on; it reports what happened to a JSON file.

Usage: ``python tk_probe.py STATE.json``. The window sits at the top-left corner of the screen.
Every 30 ms the app writes its state (atomically) when it changed: widget values, event counts,
and each widget's rectangle in root-window pixels, so a test can aim at widgets without
hard-coding a layout. It also reports where the pointer is and where the left button was last
pressed and released (root pixels, any widget), which is how a drag is seen.
"""

from __future__ import annotations

import json
import os
import sys
import tkinter as tk

LIST_ITEMS = 200


def main(state_path: str) -> None:
    root = tk.Tk()
    root.title("tk probe")
    root.geometry("900x700+0+0")
    counts = {"clicks": 0, "double_clicks": 0, "triple_clicks": 0, "right_clicks": 0, "middle_clicks": 0}
    keys: list[str] = []
    submitted: list[str] = []
    hscroll: list[str] = []
    left_button = {"press": [-1, -1], "release": [-1, -1]}

    def bump(name: str) -> None:
        counts[name] += 1

    button = tk.Button(root, text="Press me", width=20, command=lambda: bump("clicks"))
    button.pack(pady=10)
    entry_var = tk.StringVar(root)
    entry = tk.Entry(root, textvariable=entry_var, width=40, font=("DejaVu Sans", 16))
    entry.pack(pady=10)
    entry.bind("<Return>", lambda _e: submitted.append(entry_var.get()))
    scale = tk.Scale(root, from_=0, to=100, orient=tk.HORIZONTAL, length=500, sliderlength=30)
    scale.pack(pady=10)
    frame = tk.Frame(root)
    frame.pack(pady=10)
    listbox = tk.Listbox(frame, height=10, width=30)
    scrollbar = tk.Scrollbar(frame, command=listbox.yview)
    listbox.configure(yscrollcommand=scrollbar.set)
    for i in range(LIST_ITEMS):
        listbox.insert(tk.END, f"item {i}")
    listbox.pack(side=tk.LEFT)
    scrollbar.pack(side=tk.LEFT, fill=tk.Y)
    target = tk.Label(root, text="mouse target", width=30, height=4, bg="#ddeeff")
    target.pack(pady=10)
    target.bind("<Double-Button-1>", lambda _e: bump("double_clicks"))
    target.bind("<Triple-Button-1>", lambda _e: bump("triple_clicks"))
    # Tk 8.6 reports X11's horizontal wheel buttons 6 (left) and 7 (right) as Shift + button 4 / 5.
    target.bind("<Shift-Button-4>", lambda _e: hscroll.append("left"))
    target.bind("<Shift-Button-5>", lambda _e: hscroll.append("right"))
    root.bind_all("<ButtonPress-1>", lambda e: left_button.update(press=[e.x_root, e.y_root]), add="+")
    root.bind_all("<ButtonRelease-1>", lambda e: left_button.update(release=[e.x_root, e.y_root]), add="+")
    target.bind("<Button-2>", lambda _e: bump("middle_clicks"))
    target.bind("<Button-3>", lambda _e: bump("right_clicks"))
    root.bind_all("<Control-k>", lambda _e: keys.append("ctrl+k"))
    root.bind_all("<Control-Shift-K>", lambda _e: keys.append("ctrl+shift+k"))
    widgets = {"button": button, "entry": entry, "scale": scale, "listbox": listbox, "target": target}
    last = [""]

    def rect(w: tk.Widget) -> list[int]:
        return [w.winfo_rootx(), w.winfo_rooty(), w.winfo_width(), w.winfo_height()]

    def point(w: tk.Widget, xy: tuple[int, int]) -> list[int]:
        return [w.winfo_rootx() + xy[0], w.winfo_rooty() + xy[1]]

    def dump() -> None:
        state = {
            "ready": root.winfo_viewable() == 1,
            **counts,
            "keys": keys,
            "entry": entry_var.get(),
            "submitted": submitted,
            "hscroll": hscroll,
            **left_button,
            "pointer": list(root.winfo_pointerxy()),
            "scale": scale.get(),
            "list_top": round(listbox.yview()[0] * LIST_ITEMS),
            "focus": str(root.focus_get()),
            "geometry": {name: rect(w) for name, w in widgets.items()},
            "scale_points": {str(v): point(scale, scale.coords(v)) for v in (0, 50, 100)},
        }
        text = json.dumps(state, ensure_ascii=False)
        if text != last[0]:
            tmp = state_path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, state_path)
            last[0] = text
        root.after(30, dump)

    root.after(30, dump)
    root.mainloop()


if __name__ == "__main__":
    main(sys.argv[1])
