"""App name → package, for ``open_app {text: "Clock"}``.

Android has no cheap way to list launcher labels over adb: ``dumpsys package`` / ``cmd package``
print labels only per package and take seconds on a real phone, and ``aapt`` is not on the device.
So the resolver combines

1. a built-in table of common labels → candidate packages (AOSP, Google, Samsung, popular apps,
   the names Chinese users give Mobile-Agent, and SimPhone's own apps), tried in order against
   the installed packages (``pm list packages``);
2. an exact package name (``com.android.deskclock``);
3. fuzzy matching of the name against the *words* of installed package names
   (``com.simphone.expenses`` → ``simphone``, ``expenses``), which finds most third-party apps.

When nothing matches well, the caller gets close matches to show the model.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

#: label (lower case) → packages, most likely first. Several labels may share packages.
LABELS: dict[str, tuple[str, ...]] = {
    # AOSP / Google / Samsung system apps (SimPhone uses the AOSP names)
    "settings": ("com.android.settings",),
    "clock": ("com.android.deskclock", "com.google.android.deskclock", "com.sec.android.app.clockpackage"),
    "alarm": ("com.android.deskclock", "com.google.android.deskclock", "com.sec.android.app.clockpackage"),
    "contacts": ("com.android.contacts", "com.google.android.contacts", "com.samsung.android.app.contacts"),
    "messages": (
        "com.android.messaging",
        "com.google.android.apps.messaging",
        "com.samsung.android.messaging",
    ),
    "messaging": ("com.android.messaging", "com.google.android.apps.messaging"),
    "sms": ("com.android.messaging", "com.google.android.apps.messaging", "com.samsung.android.messaging"),
    "calendar": ("com.android.calendar", "com.google.android.calendar", "com.samsung.android.calendar"),
    "browser": ("com.android.browser", "com.android.chrome", "com.sec.android.app.sbrowser"),
    "internet": ("com.sec.android.app.sbrowser", "com.android.browser"),
    "chrome": ("com.android.chrome",),
    "phone": ("com.android.dialer", "com.google.android.dialer", "com.samsung.android.dialer"),
    "dialer": ("com.android.dialer", "com.google.android.dialer"),
    "camera": (
        "com.android.camera2",
        "com.android.camera",
        "com.google.android.GoogleCamera",
        "com.sec.android.app.camera",
    ),
    "gallery": ("com.android.gallery3d", "com.sec.android.gallery3d", "com.google.android.apps.photos"),
    "photos": ("com.google.android.apps.photos", "com.android.gallery3d"),
    "files": (
        "com.google.android.documentsui",
        "com.android.documentsui",
        "com.google.android.apps.nbu.files",
        "com.sec.android.app.myfiles",
    ),
    "file manager": (
        "com.google.android.apps.nbu.files",
        "com.android.documentsui",
        "com.sec.android.app.myfiles",
    ),
    "my files": ("com.sec.android.app.myfiles",),
    "downloads": ("com.android.documentsui", "com.google.android.documentsui"),
    "calculator": (
        "com.android.calculator2",
        "com.google.android.calculator",
        "com.sec.android.app.popupcalculator",
    ),
    "email": ("com.android.email", "com.google.android.gm", "com.samsung.android.email.provider"),
    "gmail": ("com.google.android.gm",),
    "maps": ("com.google.android.apps.maps",),
    "google maps": ("com.google.android.apps.maps",),
    "youtube": ("com.google.android.youtube",),
    "play store": ("com.android.vending",),
    "google play": ("com.android.vending",),
    "google": ("com.google.android.googlequicksearchbox",),
    "drive": ("com.google.android.apps.docs",),
    "docs": ("com.google.android.apps.docs.editors.docs",),
    "sheets": ("com.google.android.apps.docs.editors.sheets",),
    "keep": ("com.google.android.keep",),
    "keep notes": ("com.google.android.keep",),
    "notes": (
        "com.simphone.notes",
        "com.google.android.keep",
        "com.samsung.android.app.notes",
        "com.miui.notes",
    ),
    "recorder": (
        "com.android.soundrecorder",
        "com.google.android.apps.recorder",
        "com.sec.android.app.voicenote",
    ),
    "audio recorder": ("com.dimowner.audiorecorder", "com.android.soundrecorder"),
    "voice recorder": ("com.sec.android.app.voicenote", "com.android.soundrecorder"),
    "music": ("com.android.music", "com.google.android.apps.youtube.music"),
    "youtube music": ("com.google.android.apps.youtube.music",),
    "weather": ("com.google.android.apps.weather", "com.sec.android.daemonapp"),
    "translate": ("com.google.android.apps.translate",),
    "meet": ("com.google.android.apps.tachyon", "com.google.android.apps.meetings"),
    "fitness": ("com.google.android.apps.fitness",),
    "wallet": ("com.google.android.apps.walletnfcrel",),
    "launcher": ("com.android.launcher3", "com.google.android.apps.nexuslauncher"),
    "home": ("com.android.launcher3", "com.google.android.apps.nexuslauncher"),
    # SimPhone's own apps (labels Expenses / Shop; Notes is above)
    "expenses": ("com.simphone.expenses",),
    "expense": ("com.simphone.expenses",),
    "shop": ("com.simphone.shop",),
    # Common third-party apps
    "whatsapp": ("com.whatsapp",),
    "telegram": ("org.telegram.messenger",),
    "signal": ("org.thoughtcrime.securesms",),
    "instagram": ("com.instagram.android",),
    "facebook": ("com.facebook.katana",),
    "messenger": ("com.facebook.orca",),
    "x": ("com.twitter.android",),
    "twitter": ("com.twitter.android",),
    "tiktok": ("com.zhiliaoapp.musically", "com.ss.android.ugc.trill"),
    "spotify": ("com.spotify.music",),
    "netflix": ("com.netflix.mediaclient",),
    "amazon": ("com.amazon.mShop.android.shopping",),
    "uber": ("com.ubercab",),
    "slack": ("com.Slack",),
    "zoom": ("us.zoom.videomeetings",),
    "outlook": ("com.microsoft.office.outlook",),
    "teams": ("com.microsoft.teams",),
    "reddit": ("com.reddit.frontpage",),
    "linkedin": ("com.linkedin.android",),
    "firefox": ("org.mozilla.firefox",),
    "vlc": ("org.videolan.vlc",),
    "simple calendar pro": ("com.simplemobiletools.calendar.pro",),
    "markor": ("net.gsantner.markor",),
    "broccoli": ("com.flauschcode.broccoli",),
    "pro expense": ("com.arduia.expense",),
    "osmand": ("net.osmand",),
    "retro music": ("code.name.monkey.retromusic",),
    "tasks": ("org.tasks",),
    "joplin": ("net.cozic.joplin",),
    # Names Chinese users give Mobile-Agent
    "微信": ("com.tencent.mm",),
    "wechat": ("com.tencent.mm",),
    "qq": ("com.tencent.mobileqq",),
    "支付宝": ("com.eg.android.AlipayGphone",),
    "alipay": ("com.eg.android.AlipayGphone",),
    "淘宝": ("com.taobao.taobao",),
    "taobao": ("com.taobao.taobao",),
    "小红书": ("com.xingin.xhs",),
    "抖音": ("com.ss.android.ugc.aweme",),
    "douyin": ("com.ss.android.ugc.aweme",),
    "美团": ("com.sankuai.meituan",),
    "饿了么": ("me.ele",),
    "高德地图": ("com.autonavi.minimap",),
    "百度地图": ("com.baidu.BaiduMap",),
    "哔哩哔哩": ("tv.danmaku.bili",),
    "bilibili": ("tv.danmaku.bili",),
    "京东": ("com.jingdong.app.mall",),
    "拼多多": ("com.xunmeng.pinduoduo",),
    "微博": ("com.sina.weibo",),
    "知乎": ("com.zhihu.android",),
    "钉钉": ("com.alibaba.android.rimet",),
    "飞书": ("com.ss.android.lark",),
    "携程": ("ctrip.android.view",),
    "网易云音乐": ("com.netease.cloudmusic",),
    "设置": ("com.android.settings",),
    "时钟": ("com.android.deskclock", "com.google.android.deskclock"),
    "相机": ("com.android.camera2", "com.android.camera"),
    "日历": ("com.android.calendar", "com.google.android.calendar"),
    "联系人": ("com.android.contacts", "com.google.android.contacts"),
    "短信": ("com.android.messaging", "com.google.android.apps.messaging"),
    "信息": ("com.android.messaging", "com.google.android.apps.messaging"),
    "浏览器": ("com.android.browser", "com.android.chrome"),
    "计算器": ("com.android.calculator2", "com.google.android.calculator"),
}

#: Package-name words that say nothing about the app.
_NOISE = frozenset(
    "com org net android app apps google sec samsung mobile client main lite pro free simphone".split()
)
_PACKAGE = re.compile(r"^[A-Za-z][\w]*(\.[A-Za-z_][\w]*)+$")


class AppResolution(BaseModel):
    """A resolved package, or why not and what came close."""

    model_config = ConfigDict(frozen=True)

    package: str | None
    how: str
    suggestions: tuple[str, ...] = ()


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def package_words(package: str) -> list[str]:
    """Meaningful words of a package name: ``com.google.android.deskclock`` → ``["deskclock"]``."""
    words = [w for w in re.split(r"[._]", package.lower()) if w and w not in _NOISE]
    return words or [package.lower().rsplit(".", 1)[-1]]


def labels_for(package: str) -> list[str]:
    """The table's labels that name ``package`` (for suggestions)."""
    return [label for label, pkgs in LABELS.items() if package in pkgs]


def resolve_app(name: str, installed: Iterable[str], *, cutoff: float = 0.8) -> AppResolution:
    """Resolve an app name against the installed packages.

    >>> resolve_app("Clock", ["com.android.deskclock", "com.android.settings"]).package
    'com.android.deskclock'
    >>> resolve_app("expenses", ["com.simphone.expenses"]).package
    'com.simphone.expenses'
    >>> resolve_app("Teleporter", ["com.android.settings"]).package is None
    True
    """
    packages = sorted(set(installed))
    query = _norm(name)
    if not query:
        return AppResolution(package=None, how="empty app name")
    stripped = name.strip()
    if _PACKAGE.match(stripped) and stripped in packages:
        return AppResolution(package=stripped, how="package name")
    for label in (query, query.removesuffix(" app").strip()):
        for candidate in LABELS.get(label, ()):
            if candidate in packages:
                return AppResolution(package=candidate, how=f"label table ({label!r})")
    # Fuzzy: compare the query with each package's words (and the whole last word run).
    squeezed = query.replace(" ", "")
    best: tuple[float, str] = (0.0, "")
    for package in packages:
        words = package_words(package)
        candidates = [*words, "".join(words)]
        score = max(difflib.SequenceMatcher(None, squeezed, w).ratio() for w in candidates)
        if any(squeezed == w for w in candidates):
            score = 1.0
        elif len(squeezed) >= 4 and any(squeezed in w for w in candidates):
            score = max(score, 0.85)
        if score > best[0]:
            best = (score, package)
    if best[0] >= cutoff:
        return AppResolution(package=best[1], how=f"package name match ({best[0]:.2f})")
    return AppResolution(package=None, how="no match", suggestions=suggest(name, packages))


def suggest(name: str, packages: Iterable[str], n: int = 5) -> tuple[str, ...]:
    """Close matches among installed apps, as ``label (package)`` or bare package names."""
    query = _norm(name)
    named: dict[str, str] = {}
    for package in packages:
        labels = labels_for(package)
        named[package] = f"{labels[0].title()} ({package})" if labels else package
    keys: dict[str, str] = {}
    for package, shown in named.items():
        for key in [*labels_for(package), *package_words(package)]:
            keys.setdefault(key, shown)
    close = difflib.get_close_matches(query, list(keys), n=n, cutoff=0.5)
    out = list(dict.fromkeys(keys[k] for k in close))
    return tuple(out[:n])


__all__ = ["LABELS", "AppResolution", "labels_for", "package_words", "resolve_app", "suggest"]
