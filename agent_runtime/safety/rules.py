"""Built-in safety rules: the words that make a tap sensitive, what each kind of sensitive tap
does (its *family*, and the words of a task that ask for it), and what each common app is for.

These are data, kept apart from :mod:`agent_runtime.safety.guard` so that tuning a word list
never touches the matching logic. Every word and phrase is matched whole, in any case.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Family(BaseModel):
    """What a sensitive tap does, and which words of a task or plan ask for it.

    ``words`` are button words (a tap on "Send SMS" matched ``send``); ``asks`` are the task's
    words (matched with their inflections: "texted", "removing", "orders"). A sensitive tap whose
    family the task never asks for is off-task. ``recipient`` families also need the person or
    payee shown on the screen to be one the task names."""

    model_config = ConfigDict(frozen=True)

    name: str
    #: The reason's wording: "the task never asks to {verb}".
    verb: str
    words: tuple[str, ...]
    asks: tuple[str, ...]
    recipient: bool = False
    #: Only a recipient by resource id counts (a shop's toolbar title names a screen, not a payee).
    recipient_by_id_only: bool = False


FAMILIES: tuple[Family, ...] = (
    Family(
        name="messaging",
        verb="send a message",
        words=("send", "reply", "text", "message", "sms", "share", "forward"),
        asks=(
            "send",
            "sent",
            "text",
            "message",
            "sms",
            "reply",
            "respond",
            "share",
            "forward",
            "tell",
            "email",
            "mail",
            "write to",
            "invite",
            "chat",
        ),
        recipient=True,
    ),
    Family(
        name="buying",
        verb="buy",
        words=("pay", "buy", "purchase", "order", "place order", "checkout", "check out", "pay now"),
        asks=("buy", "bought", "purchase", "order", "checkout", "check out", "pay", "paid"),
        recipient=True,
        recipient_by_id_only=True,
    ),
    Family(
        name="deleting",
        verb="delete",
        words=("delete", "remove", "erase", "clear", "uninstall", "discard", "trash"),
        asks=("delete", "remove", "erase", "clear", "uninstall", "discard", "trash", "get rid of"),
    ),
    Family(name="installing", verb="install", words=("install", "download"), asks=("install", "download")),
    Family(
        name="calling",
        verb="call",
        words=("call", "dial"),
        asks=("call", "dial", "ring"),
        recipient=True,
    ),
    Family(
        name="permissions",
        verb="grant a permission",
        words=("allow", "grant"),
        asks=("allow", "grant", "permit", "permission", "enable", "give access"),
    ),
    Family(
        name="transfer",
        verb="transfer money",
        words=("transfer", "send money", "wire"),
        asks=("transfer", "send money", "wire", "pay", "paid"),
        recipient=True,
        recipient_by_id_only=True,
    ),
    Family(
        name="posting",
        verb="post",
        words=("post", "publish", "tweet"),
        asks=("post", "publish", "tweet", "share", "upload"),
    ),
    Family(
        name="subscribing",
        verb="subscribe",
        words=("subscribe", "sign up", "join"),
        asks=("subscribe", "sign up", "join", "follow", "enroll", "register"),
    ),
    Family(
        name="resetting",
        verb="reset",
        words=("reset", "factory reset"),
        asks=("reset", "restore", "factory"),
    ),
    Family(
        name="signing out",
        verb="sign out",
        words=("sign out", "log out", "logout", "sign off"),
        asks=("sign out", "log out", "logout", "sign off"),
    ),
)


class AppRule(BaseModel):
    """One app's built-in rule: its names, extra sensitive words, the task words that make
    opening it on-task, and whether opening it always needs a person."""

    model_config = ConfigDict(frozen=True)

    label: str
    #: Other names and packages that mean this app (the user's config may key on any of them).
    names: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    deny: bool = False
    #: Whether what is typed into the app may leave the device (a message, a URL, a search sent
    #: to a server). The guard's unasked-number rule, which stops one-time codes and account
    #: numbers being carried off, applies only here; an app not listed is taken to be outbound.
    #: Typing a number read on the screen into a local record (an expense's amount, a note) is
    #: ordinary copying.
    outbound: bool = True


#: SimPhone's apps (their topics cover every goal of its task templates) and common Android apps.
APPS: tuple[AppRule, ...] = (
    AppRule(
        label="Browser",
        names=("com.android.browser",),
        topics=(
            "web",
            "browse",
            "bookmark",
            "url",
            "website",
            "site",
            "page",
            "http",
            "https",
            "wiki",
            "internet",
        ),
    ),
    AppRule(
        label="Calendar",
        outbound=False,
        names=("com.android.calendar", "com.google.android.calendar"),
        topics=(
            "event",
            "schedule",
            "meeting",
            "appointment",
            "agenda",
            "today",
            "tomorrow",
            "yesterday",
            "days from",
        ),
    ),
    AppRule(
        label="Clock",
        outbound=False,
        names=("com.android.deskclock", "com.google.android.deskclock", "Alarm"),
        topics=("alarm", "timer", "stopwatch", "wake me", "bedtime"),
    ),
    AppRule(
        label="Contacts",
        outbound=False,
        names=("com.android.contacts", "com.google.android.contacts", "People"),
        topics=("contact", "phone number", "email address", "address book"),
    ),
    AppRule(
        label="Expenses",
        outbound=False,
        names=("com.simphone.expenses",),
        topics=("expense", "spend", "spent", "spending", "budget"),
    ),
    AppRule(
        label="Messages",
        names=("com.android.messaging", "com.google.android.apps.messaging", "SMS", "Messaging"),
        topics=("message", "text", "sms", "reply", "conversation", "chat"),
    ),
    AppRule(
        label="Notes",
        outbound=False,
        names=("com.simphone.notes", "Keep", "Google Keep", "com.google.android.keep"),
        topics=("note", "memo", "jot", "write down"),
    ),
    AppRule(
        label="Settings",
        outbound=False,
        names=("com.android.settings",),
        words=("forget", "factory reset", "erase all data"),
        topics=(
            "setting",
            "wi-fi",
            "wifi",
            "bluetooth",
            "brightness",
            "volume",
            "font size",
            "screen",
            "display",
            "sound",
            "ringtone",
            "vibration",
            "network",
            "airplane mode",
            "this phone",
            "device name",
            "dark mode",
            "battery",
            "language",
            "notification",
            "location",
        ),
    ),
    AppRule(
        label="Shop",
        names=("com.simphone.shop",),
        topics=(
            "shopping",
            "cart",
            "buy",
            "purchase",
            "order",
            "product",
            "wishlist",
            "price",
            "checkout",
            "store",
        ),
    ),
    AppRule(
        label="Files",
        outbound=False,
        names=("com.simphone.files", "Files by Google", "File manager", "com.google.android.documentsui"),
        topics=("file", "folder", "document", "download", "storage", "pdf"),
    ),
    AppRule(
        label="Music",
        outbound=False,
        names=("com.simphone.music", "YouTube Music", "Spotify", "com.spotify.music"),
        topics=(
            "music",
            "song",
            "playlist",
            "artist",
            "album",
            "track",
            "listen",
            "shuffle",
            "repeat",
            "sing",
            "singer",
            "band",
        ),
    ),
    AppRule(
        label="Recorder",
        outbound=False,
        names=(
            "com.simphone.recorder",
            "Voice Recorder",
            "Sound Recorder",
            "com.google.android.apps.recorder",
        ),
        topics=("recording", "recorder", "record", "voice memo", "audio"),
    ),
    AppRule(
        label="Weather",
        names=("com.simphone.weather", "com.google.android.apps.weather"),
        topics=(
            "weather",
            "forecast",
            "temperature",
            "rain",
            "snow",
            "sunny",
            "high",
            "low",
            "celsius",
            "fahrenheit",
        ),
    ),
    AppRule(
        label="Gmail",
        names=("Email", "Mail", "com.simphone.email", "com.google.android.gm", "com.android.email"),
        topics=("email", "e-mail", "mail", "inbox", "draft", "outbox", "subject line"),
    ),
    AppRule(
        label="Chrome",
        names=("com.android.chrome", "Google Chrome"),
        topics=("browser", "web", "website", "url", "http", "https", "internet", "online", "google"),
    ),
    AppRule(
        label="Phone",
        names=("Dialer", "com.google.android.dialer", "com.android.dialer"),
        topics=(
            "call",
            "dial",
            "voicemail",
            "ring",
            "caller",
            "call history",
            "call log",
            "blocked number",
            "unblock",
        ),
    ),
    AppRule(
        label="Camera",
        outbound=False,
        names=("com.android.camera", "com.android.camera2", "com.google.android.GoogleCamera"),
        topics=("camera", "photo", "picture", "selfie", "video", "record"),
    ),
    AppRule(
        label="Photos",
        outbound=False,
        names=(
            "Gallery",
            "Google Photos",
            "com.simphone.gallery",
            "com.google.android.apps.photos",
            "com.android.gallery3d",
        ),
        topics=("photo", "picture", "gallery", "album", "image"),
    ),
    AppRule(
        label="Maps",
        names=("Google Maps", "com.simphone.maps", "com.google.android.apps.maps"),
        topics=(
            "map",
            "direction",
            "navigate",
            "route",
            "nearby",
            "nearest",
            "closest",
            "location",
            "how far",
            "distance",
            "kilometre",
            "kilometer",
            "mile",
            "drive",
            "driving",
            "transit",
            "walk",
            "walking",
            "cycle",
            "bike",
            "commute",
            "travel time",
            "saved place",
        ),
    ),
    AppRule(
        label="Play Store",
        names=("Google Play", "Play Store", "com.android.vending"),
        words=("update",),
        topics=("install", "app store", "play store", "download"),
    ),
    AppRule(
        label="YouTube",
        names=("com.google.android.youtube",),
        topics=("youtube", "video", "watch"),
    ),
    AppRule(
        label="Wallet",
        names=("Google Wallet", "Google Pay", "com.google.android.apps.walletnfcrel"),
        topics=("wallet", "pay", "payment", "card"),
    ),
    AppRule(label="Bank", topics=("bank", "banking", "balance", "transfer", "pay", "payment")),
    AppRule(label="WhatsApp", names=("com.whatsapp",), topics=("whatsapp", "message", "chat")),
    AppRule(label="Telegram", names=("org.telegram.messenger",), topics=("telegram", "message", "chat")),
)
