"""Expenses tasks: log, edit and delete expenses; monthly and per-category totals.

State and screens are documented in :mod:`agent_runtime.simphone.apps.expenses`.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.expenses import Expense, ExpensesApp
from agent_runtime.simphone.tasks.base import QuestionTask, Task
from agent_runtime.simphone.tasks.oracle import MAX_SCROLLS, OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.expenses"
APP = "Expenses"
ITEMS = {
    "Parking": "Transport",
    "Train ticket": "Transport",
    "Lunch with team": "Food",
    "Bakery": "Food",
    "Phone bill": "Bills",
    "Water bill": "Bills",
    "Concert tickets": "Entertainment",
    "Board game": "Entertainment",
    "Vitamins": "Health",
    "Dentist": "Health",
    "Running socks": "Shopping",
    "Umbrella": "Shopping",
}
_MONEY = re.compile(r"[-+]?\$?([\d,]+\.\d{2})")


def expenses_app(phone: SimPhone) -> ExpensesApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, ExpensesApp)
    return app


def random_amount(rng: random.Random, low: int = 300, high: int = 9000) -> dict[str, Any]:
    cents = rng.randrange(low, high, 5)
    return {"amount_cents": cents, "amount": f"{cents / 100:.2f}"}


def money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def cents_of(text: str) -> int:
    m = _MONEY.search(text)
    if m is None:
        raise ValueError(f"no amount in {text!r}")
    return round(float(m[1].replace(",", "")) * 100)


def titled(phone: SimPhone, title: str) -> list[Expense]:
    return [e for e in expenses_app(phone).state.expenses if e.title.strip().casefold() == title.casefold()]


def place_expense(
    phone: SimPhone, title: str, cents: int, category: str, day: dt.date | None = None
) -> Expense:
    """Make this the only expense called ``title``."""
    app = expenses_app(phone)
    app.state.expenses = [e for e in app.state.expenses if e.title.strip().casefold() != title.casefold()]
    return app.add_expense(title, cents, category, day)


def this_month(phone: SimPhone, days_ago: int) -> dt.date:
    """A day in the current month, ``days_ago`` before today where the month allows."""
    today = phone.now.date()
    return today.replace(day=max(1, today.day - days_ago))


def last_month(phone: SimPhone) -> dt.date:
    return phone.now.date().replace(day=1) - dt.timedelta(days=3)


def open_expense(ui: OracleUI, title: str) -> Iterator[Action]:
    yield ui.open_app(APP)
    yield from ui.tap(title, rid="title", cls="TextView")


class ExpensesAdd(Task):
    template = 'Log an expense "{title}" of ${amount} in the {category} category.'
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        title = rng.choice(sorted(ITEMS))
        return {"title": title, "category": ITEMS[title], **random_amount(rng)}

    def setup(self, phone: SimPhone) -> None:
        app = expenses_app(phone)
        app.state.expenses = [
            e for e in app.state.expenses if e.title.casefold() != self.params["title"].casefold()
        ]
        #: Logged today.
        self.day = phone.now.date()

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        ok = any(
            e.amount_cents == p["amount_cents"] and e.category == p["category"] and e.date == self.day
            for e in titled(phone, p["title"])
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        p = self.params
        yield ui.open_app(APP)
        yield from ui.tap(desc="Add expense")
        yield from ui.type_into(None, p["title"], rid="title", cls="EditText")
        yield from ui.type_into(None, p["amount"], rid="amount", cls="EditText")
        yield from ui.tap("Category", cls="TextView")
        yield from ui.tap(p["category"], cls="TextView")
        yield from ui.tap("Save", rid="save")


class ExpensesEditAmount(Task):
    template = 'The "{title}" expense was actually ${amount}. Correct it.'
    app_names = (APP,)
    complexity = 1.0

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        title = rng.choice(sorted(ITEMS))
        return {"title": title, "category": ITEMS[title], **random_amount(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        wrong = p["amount_cents"] + self.rng().choice([-100, 100, 250, 1000])
        #: The expense that must carry the new amount.
        self.expense_id = place_expense(
            phone, p["title"], max(wrong, 50), p["category"], this_month(phone, 1)
        ).id

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        found = [e for e in expenses_app(phone).state.expenses if e.id == self.expense_id]
        return 1.0 if found and found[0].amount_cents == self.params["amount_cents"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_expense(ui, self.params["title"])
        yield from ui.tap("Edit", rid="edit")
        yield from ui.type_into(None, self.params["amount"], rid="amount", cls="EditText")
        yield from ui.tap("Save", rid="save")


class ExpensesDelete(Task):
    template = 'Delete the "{title}" expense.'
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        title = rng.choice(sorted(ITEMS))
        return {"title": title, "category": ITEMS[title], **random_amount(rng)}

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        target = place_expense(phone, p["title"], p["amount_cents"], p["category"], this_month(phone, 0))
        #: Every other expense must survive.
        self.keep = {e.id for e in expenses_app(phone).state.expenses} - {target.id}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if {e.id for e in expenses_app(phone).state.expenses} == self.keep else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_expense(ui, self.params["title"])
        yield from ui.tap("Delete", rid="delete")
        yield from ui.dialog_button("Delete")


def _spread(rng: random.Random, n: int) -> list[dict[str, Any]]:
    titles = rng.sample(sorted(ITEMS), n)
    return [{"title": t, "category": ITEMS[t], **random_amount(rng, 200, 6000)} for t in titles]


def _fill_month(task: Task, phone: SimPhone, items: list[dict[str, Any]]) -> None:
    """Replace all expenses: ``items`` this month plus two from last month (not to be counted)."""
    app = expenses_app(phone)
    app.state.expenses = []
    rng = task.rng()
    for i, item in enumerate(items):
        app.add_expense(item["title"], item["amount_cents"], item["category"], this_month(phone, i * 2))
    for title in rng.sample([t for t in ITEMS if t not in {i["title"] for i in items}], 2):
        app.add_expense(title, rng.randrange(500, 5000), ITEMS[title], last_month(phone))


class ExpensesMonthTotalQuestion(QuestionTask):
    template = "According to the Expenses app, how much have I spent so far this month?"
    app_names = (APP,)
    complexity = 0.5
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"items": _spread(rng, rng.randint(2, 5))}

    def setup(self, phone: SimPhone) -> None:
        _fill_month(self, phone, self.params["items"])

    def expected_answer(self) -> str:
        return f"{sum(i['amount_cents'] for i in self.params['items']) / 100:.2f}"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield ui.answer(ui.require(rid="month_total").text)


class ExpensesCategoryTotalQuestion(QuestionTask):
    template = "How much did I spend on {category} this month?"
    app_names = (APP,)
    complexity = 1.2
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        items = _spread(rng, rng.randint(3, 6))
        return {"items": items, "category": rng.choice(sorted({i["category"] for i in items}))}

    def setup(self, phone: SimPhone) -> None:
        _fill_month(self, phone, self.params["items"])

    def expected_answer(self) -> str:
        cents = sum(
            i["amount_cents"] for i in self.params["items"] if i["category"] == self.params["category"]
        )
        return f"{cents / 100:.2f}"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        month_label = next(el.text for el in ui.find_all(cls="TextView") if _is_month(el.text))
        prefix = f"{self.params['category']} · {month_label[:3]} "
        rows: dict[tuple[str, str, str], int] = {}
        last: tuple[str, ...] | None = None
        for _ in range(MAX_SCROLLS):
            for row in ui.find_all(rid="expense_item"):
                texts = {el.resource_id.rpartition("/")[2]: el.text for el in ui.children(row)}
                if {"title", "summary", "amount"} <= texts.keys():
                    rows[(texts["title"], texts["summary"], texts["amount"])] = cents_of(texts["amount"])
            signature = tuple(ui.labels())
            if signature == last:
                break
            last = signature
            yield ui.swipe(1)
        total = sum(c for (_, summary, _), c in rows.items() if summary.startswith(prefix))
        yield ui.answer(money(total))


def _is_month(text: str) -> bool:
    try:
        dt.datetime.strptime(text, "%B %Y")
    except ValueError:
        return False
    return True


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    ExpensesAdd,
    ExpensesEditAmount,
    ExpensesDelete,
    ExpensesMonthTotalQuestion,
    ExpensesCategoryTotalQuestion,
)
