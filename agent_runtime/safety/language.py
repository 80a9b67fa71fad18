"""Reading the user's words: which of them ask for something, in English, Spanish, German,
French and Chinese.

A verb in the task licenses a sensitive action only when the user *asks* for it. "… but don't
buy anything", "Do not delete any other note", "sin enviar nada" and "不要删除" name the verb to
forbid it; "What did Alice last text me?" is a read-only question; "Create a note that says
'Buy milk'" quotes content. :func:`read_task` splits the task into what licenses (positive
requests) and what only names things (apps, people, values), so the guard looks each up in the
right text. When the reading is unsure the verb is not licensed: the guard then calls the action
off-task, which asks a person in an attended run and denies it in an unattended one.

The other languages' words live here, apart from the English rules
(:mod:`agent_runtime.safety.rules`): ``ASKS`` by verb family, ``TOPICS`` by app label. Latin
script words are stems matched at the start of a word on folded text (case and accents gone:
"envía" is "envi…"); Chinese words are matched anywhere (Chinese has no spaces between words).
"""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from agent_runtime.safety.normalize import fold

#: Task words that ask for each verb family (keys: :attr:`~agent_runtime.safety.rules.Family.name`).
ASKS: dict[str, tuple[str, ...]] = {
    "messaging": (
        # es (verbs only: "el último mensaje" names a message, it does not ask to send one)
        "envi",
        "mand",
        "escrib",
        "respond",
        "contest",
        "textea",
        # de
        "schick",
        "sende",
        "antworte",
        "schreib",
        # fr
        "envoi",
        "envoy",
        "repond",
        "ecri",
        # zh
        "发短信",
        "发消息",
        "发信息",
        "发送",
        "发给",
        "回复",
        "告诉",
    ),
    "buying": (
        "compr",
        "pagar",
        "paga",
        "pague",
        "pedido",
        "kauf",
        "einkauf",
        "bestell",
        "bezahl",
        "zahle",
        "achet",
        "achat",
        "command",
        "payer",
        "paie",
        "买",
        "购买",
        "下单",
        "付款",
        "支付",
        "结账",
        "订购",
    ),
    "deleting": (
        "borr",
        "elimin",
        "quit",
        "suprim",
        "losch",
        "entfern",
        "supprim",
        "effac",
        "retir",
        "enlev",
        "删除",
        "删掉",
        "移除",
        "清除",
        "去掉",
    ),
    "installing": ("instal", "descarg", "herunterlad", "telecharg", "安装", "下载"),
    "calling": ("llam", "anruf", "ruf", "appel", "打电话", "拨打", "呼叫"),
    "permissions": ("permit", "concede", "otorg", "erlaub", "gewahr", "autoris", "允许", "授权"),
    "transfer": ("transfer", "uberweis", "virement", "vire", "转账", "汇款"),
    "posting": ("public", "poste", "veroffentlich", "publi", "发布", "发帖"),
    "subscribing": ("suscrib", "abonn", "anmeld", "inscri", "订阅", "注册"),
    "resetting": ("restablec", "reinici", "zurucksetz", "reinitialis", "重置", "恢复出厂"),
    "signing out": ("cerrar sesion", "cierra sesion", "abmeld", "deconnect", "退出", "注销", "登出"),
}

#: Task words that make opening each app on-task (keys: app labels of the built-in rules).
TOPICS: dict[str, tuple[str, ...]] = {
    "Messages": (
        "mensaje",
        "sms",
        "respond",
        "conversacion",
        "envi",
        "nachricht",
        "antwort",
        "unterhaltung",
        "schick",
        "escrib",
        "schreib",
        "geschrieb",
        "message",
        "texto",
        "repond",
        "envoi",
        "envoy",
        "短信",
        "消息",
        "信息",
        "回复",
        "发给",
        "聊天",
    ),
    "Clock": (
        "alarma",
        "despert",
        "temporizador",
        "cronometro",
        "reloj",
        "wecker",
        "alarm",
        "timer",
        "stoppuhr",
        "uhr",
        "reveil",
        "alarme",
        "minuteur",
        "chronometre",
        "horloge",
        "闹钟",
        "计时器",
        "秒表",
        "时钟",
    ),
    "Notes": ("nota", "notiz", "note", "笔记", "备忘", "便签"),
    "Contacts": (
        "contacto",
        "numero de telefono",
        "telefono",
        "kontakt",
        "telefonnummer",
        "contact",
        "numero",
        "联系人",
        "电话号码",
        "通讯录",
    ),
    "Calendar": (
        "evento",
        "cita",
        "reunion",
        "calendario",
        "agenda",
        "manana",
        "hoy",
        "termin",
        "kalender",
        "ereignis",
        "besprechung",
        "morgen",
        "heute",
        "evenement",
        "rendez",
        "calendrier",
        "demain",
        "aujourd",
        "日历",
        "日程",
        "活动",
        "会议",
        "约会",
        "明天",
        "今天",
    ),
    "Settings": (
        "ajuste",
        "configuracion",
        "wifi",
        "wi-fi",
        "bluetooth",
        "brillo",
        "volumen",
        "pantalla",
        "modo avion",
        "einstellung",
        "wlan",
        "helligkeit",
        "lautstarke",
        "bildschirm",
        "flugmodus",
        "parametre",
        "reglage",
        "luminosite",
        "volume",
        "ecran",
        "mode avion",
        "设置",
        "蓝牙",
        "亮度",
        "音量",
        "屏幕",
        "飞行模式",
        "无线",
    ),
    "Browser": (
        "navegador",
        "web",
        "pagina",
        "busca",
        "internet",
        "browser",
        "webseite",
        "seite",
        "such",
        "navigateur",
        "page",
        "site",
        "cherch",
        "浏览器",
        "网页",
        "网站",
        "搜索",
        "上网",
    ),
    "Shop": (
        "tienda",
        "carrito",
        "compr",
        "pedido",
        "producto",
        "warenkorb",
        "kauf",
        "bestell",
        "produkt",
        "laden",
        "boutique",
        "panier",
        "achet",
        "commande",
        "produit",
        "magasin",
        "商店",
        "购物车",
        "购买",
        "买",
        "订单",
        "商品",
    ),
    "Expenses": (
        "gasto",
        "presupuesto",
        "ausgabe",
        "budget",
        "depense",
        "支出",
        "开销",
        "花费",
        "记账",
        "预算",
    ),
    "Maps": (
        "mapa",
        "ruta",
        "direccion",
        "distancia",
        "cerca",
        "karte",
        "route",
        "entfernung",
        "adresse",
        "navigation",
        "carte",
        "itineraire",
        "trajet",
        "lieu",
        "地图",
        "路线",
        "导航",
        "距离",
        "地址",
        "最近的",
    ),
    "Phone": (
        "llamada",
        "marcador",
        "bloque",
        "anruf",
        "telefon",
        "blockiert",
        "appel",
        "bloqu",
        "通话",
        "来电",
        "未接",
        "拨号",
        "拉黑",
        "屏蔽",
    ),
    "Gmail": (
        "correo",
        "email",
        "e-mail",
        "borrador",
        "mail",
        "entwurf",
        "courriel",
        "brouillon",
        "邮件",
        "电子邮件",
        "草稿",
        "收件箱",
    ),
    "Music": (
        "musica",
        "cancion",
        "canta",
        "artista",
        "musik",
        "lied",
        "song",
        "singt",
        "kunstler",
        "musique",
        "chanson",
        "chante",
        "artiste",
        "音乐",
        "歌",
        "播放列表",
        "歌手",
        "唱",
    ),
    "Files": ("archivo", "carpeta", "datei", "ordner", "fichier", "dossier", "文件"),
    "Photos": ("foto", "galeria", "bild", "galerie", "photo", "image", "照片", "相册", "图片"),
    "Recorder": ("grabacion", "grabadora", "aufnahme", "enregistr", "录音"),
    "Weather": (
        "tiempo",
        "clima",
        "pronostico",
        "wetter",
        "vorhersage",
        "meteo",
        "prevision",
        "天气",
        "预报",
        "气温",
    ),
}

#: How a task names a person by their place in the device's own records rather than by name
#: ("the person who texted me last", "my most recent missed call", "the sender of the email"),
#: by record (keys: :attr:`~agent_runtime.device.AddressBook.records`). Matched on folded text.
ROLES: dict[str, re.Pattern[str]] = {
    "calls": re.compile(
        r"\b(?:person|one|someone|whoever|who|number)\b[^.,;]{0,20}\bcalled me\b|\bcallers?\b"
        r"|\b(?:my|the) (?:\w+ ){0,2}missed call\b(?! from)"
        r"|quien me llamo|llamada perdida\b|anrufer|verpasst\w* anruf\b|wer mich angerufen"
        r"|appel manque\b|appelant|qui m'a appele|给我打电话的人|来电者|最近的未接来电"
    ),
    "texts": re.compile(
        r"\b(?:person|one|someone|whoever|who|number)\b[^.,;]{0,20}\b(?:texted|messaged) me\b|\bsenders?\b"
        r"|quien me escribio|remitente|wer mir geschrieben|absender|qui m'a ecrit|expediteur"
        r"|给我发短信的人|给我发消息的人|发件人"
    ),
    "emails": re.compile(
        r"\b(?:person|one|someone|whoever|who)\b[^.,;]{0,20}\b(?:e-?mailed|mailed) me\b|\bsenders?\b"
        r"|quien me envio (?:un|el) correo|remitente|absender|expediteur|给我发邮件的人|发件人"
    ),
}


def roles(folded: str) -> tuple[str, ...]:
    """The records whose people ``folded`` (folded task words) names by role, e.g. ``("calls",)``."""
    return tuple(kind for kind, pattern in ROLES.items() if pattern.search(folded))


# -- reading a task ---------------------------------------------------------------------------

#: Quoted content (a message to send, a note's text) names things; it never asks for anything.
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|„[^“”\n]*[“”]|«[^»\n]*»|「[^」\n]*」|『[^』\n]*』')
#: Sentence ends (the terminator is kept with its sentence, so a question is known by it). A
#: dot inside a word ("casey.nguyen@work.sim", "32.00", "example.com") ends nothing: splitting
#: there would cut an address the user gave into pieces no one could find again.
_SENTENCE = re.compile(r"(?:[^.!?。！？\n;；]|\.(?=\w))*[.!?。！？\n;；]?")
#: Clause breaks inside a sentence: a negation reaches no further than these.
_CLAUSE = re.compile(
    r"[,，、:：]|\b(?:but|and then|then|however|pero|luego|despues|aber|dann|mais|puis|ensuite)\b"
    r"|但是|但|然后"
)
#: Negations that come before what they negate: the clause from here on licenses nothing.
_NEGATION = re.compile(
    r"\b(?:don't|dont|do not|does not|doesn't|never|not|no|none|without|nor|neither|avoid|"
    r"nunca|jamas|sin|ni|"
    r"ohne|weder|"
    r"ne|n'|sans|jamais|aucun|aucune)(?:\b|(?<='))"
    r"|不要|不用|无需|不必|别|勿|禁止|不准|不许|没有|不",
)
#: Negations that may come after the verb ("buy nothing", "lösche keine Notiz", "n'achète rien"):
#: the whole clause licenses nothing.
_NEGATION_ANYWHERE = re.compile(r"\b(?:nothing|anything|nada|nichts|nicht|kein\w*|nie|niemals|rien|pas)\b")
#: "Don't forget to …" asks for it after all.
_REMINDER = re.compile(
    r"\b(?:don't|dont|do not) forget(?: to)?\b|\bno olvides(?: de)?\b|\bvergiss nicht\b"
    r"|\bn'oublie pas(?: de)?\b|别忘了|不要忘记|不要忘了"
)
#: A question that is a polite request ("Can you text Alice?") still asks.
_REQUEST = re.compile(
    r"^\W*(?:can you|could you|would you|will you|please|puedes|podrias|puede|kannst du|konnen sie|"
    r"konntest du|peux-tu|pouvez-vous|pourrais-tu|pourriez-vous)\b|please|por favor|bitte|"
    r"s'il te plait|s'il vous plait|请|帮我|能不能|可以帮"
)
#: Requests to be told something read, they never send: "tell me", "let me know".
_READ_ONLY = re.compile(r"\b(?:tell me|let me know|show me|dime|sag mir|dis-moi|dites-moi)\b|告诉我")


class Reading(BaseModel):
    """A task read for the guard (all three texts folded: see :func:`~.normalize.fold`)."""

    model_config = ConfigDict(frozen=True)

    #: Everything the user said: where apps, values and quoted content are looked up.
    full: str
    #: Without what the user negated: where the people a message may go to are looked up.
    positive: str
    #: Only positive requests (no negation, no read-only question, no quoted content): where the
    #: verbs that license a sensitive action are looked up.
    licensing: str


def _drop_negated(sentence: str) -> str:
    kept = []
    for clause in _CLAUSE.split(sentence):
        if clause is None:
            continue
        if _NEGATION_ANYWHERE.search(clause):
            continue
        hit = _NEGATION.search(clause)
        kept.append(clause[: hit.start()] if hit else clause)
    return " | ".join(kept)


@lru_cache(maxsize=512)
def read_task(task: str) -> Reading:
    """Read ``task`` (the request and the user's answers) for the guard."""
    full = fold(task)
    unquoted = _QUOTED.sub(" | ", full)
    positive: list[str] = []
    licensing: list[str] = []
    for match in _SENTENCE.finditer(_REMINDER.sub(" ", unquoted)):
        sentence = match.group()
        if not sentence.strip():
            continue
        kept = _drop_negated(sentence)
        positive.append(kept)
        question = sentence.rstrip().endswith(("?", "？")) or sentence.lstrip().startswith("¿")
        if question and not _REQUEST.search(sentence.strip()):
            continue
        licensing.append(_READ_ONLY.sub(" | ", kept))
    quoted = " ".join(_QUOTED.findall(full))
    return Reading(
        full=full,
        positive=" || ".join([*positive, quoted]),
        licensing=" || ".join(licensing),
    )


@lru_cache(maxsize=4096)
def _stem(word: str) -> re.Pattern[str]:
    if re.search(r"[\u3040-\u30ff\u3400-\u9fff]", word):
        return re.compile(re.escape(word))
    parts = [re.escape(w) for w in fold(word).replace("-", " ").split()]
    return re.compile(r"(?<!\w)" + r"[\s\-]+".join(parts))


def has_stem(word: str, folded: str) -> bool:
    """Whether ``folded`` (already :func:`~.normalize.fold`-ed) has a word starting with ``word``
    (a Chinese ``word``: anywhere)."""
    return bool(_stem(word).search(folded))
