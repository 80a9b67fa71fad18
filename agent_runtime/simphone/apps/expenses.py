"""Expenses (``com.simphone.expenses``, label ``Expenses``).

State — :class:`ExpensesState`:
    ``expenses``: list of :class:`Expense` (``id``, ``title``, ``amount_cents`` int,
    ``category`` — one of :data:`CATEGORIES`, ``date`` datetime.date, ``note``); ``next_id``;
    ``currency`` ("$"). Helpers: :meth:`ExpensesApp.add_expense`, :meth:`ExpensesApp.find`,
    :meth:`ExpensesApp.total_cents`.

Screens:
    * ``main`` "Expenses": a summary card "This month" with the month's total (resource-id
      ``month_total``, e.g. ``$123.45``), then expenses newest first (item title = title,
      summary = ``Food · Mar 14``, trailing amount ``$12.50``); FAB "Add expense".
    * ``edit`` "Add expense" / "Edit expense": EditTexts "Title" (``title``), "Amount"
      (``amount``; digits and a decimal point), "Note" (``note``); items "Category" (choice
      dialog) and "Date" (date picker); button "Save" (resource-id ``save``). Title and an
      amount > 0 are required.
    * ``details`` (title = expense title): amount, category, date, note; buttons "Edit" and
      "Delete" (confirm dialog "Delete expense?").
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from agent_runtime.simphone.app import App
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI

CATEGORIES = ("Food", "Transport", "Shopping", "Bills", "Entertainment", "Health", "Other")
_SEED = (
    ("Groceries", "Food"),
    ("Coffee", "Food"),
    ("Bus pass", "Transport"),
    ("Electricity bill", "Bills"),
    ("Movie tickets", "Entertainment"),
    ("Pharmacy", "Health"),
    ("New headphones", "Shopping"),
    ("Taxi", "Transport"),
)


@dataclass
class Expense:
    id: int
    title: str
    amount_cents: int
    category: str = "Other"
    date: dt.date = dt.date(2025, 1, 1)
    note: str = ""

    @property
    def amount(self) -> float:
        return self.amount_cents / 100


@dataclass
class ExpensesState:
    expenses: list[Expense] = field(default_factory=list)
    next_id: int = 1
    currency: str = "$"


def parse_amount(text: str) -> int | None:
    """``"12.5"`` → 1250 cents; None for anything that is not a positive amount."""
    cleaned = text.strip().replace(",", "").lstrip("$€£").strip()
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if not value.is_finite() or value <= 0 or value >= 10_000_000:
        return None
    return int((value * 100).quantize(Decimal(1)))


class ExpensesApp(App):
    package = "com.simphone.expenses"
    label = "Expenses"
    activity = "com.simphone.expenses.MainActivity"

    def initial_state(self, rng: random.Random) -> ExpensesState:
        state = ExpensesState()
        today = self.phone.now.date()
        for title, category in rng.sample(_SEED, 5):
            day = today - dt.timedelta(days=rng.randint(0, 20))
            state.expenses.append(Expense(state.next_id, title, rng.randint(250, 9000), category, day))
            state.next_id += 1
        return state

    def add_expense(
        self,
        title: str,
        amount_cents: int,
        category: str = "Other",
        date: dt.date | None = None,
        note: str = "",
    ) -> Expense:
        expense = Expense(
            self.state.next_id, title, amount_cents, category, date or self.phone.now.date(), note
        )
        self.state.next_id += 1
        self.state.expenses.append(expense)
        return expense

    def find(self, title: str) -> Expense | None:
        wanted = title.strip().lower()
        return next((e for e in self.state.expenses if e.title.lower() == wanted), None)

    def total_cents(self, year: int, month: int) -> int:
        return sum(
            e.amount_cents for e in self.state.expenses if (e.date.year, e.date.month) == (year, month)
        )

    def money(self, cents: int) -> str:
        return f"{self.state.currency}{cents / 100:,.2f}"

    def _get(self, expense_id: int | None) -> Expense | None:
        return next((e for e in self.state.expenses if e.id == expense_id), None)

    def build(self, ui: UI) -> View:
        name = self.screen.name
        expense = self._get(self.screen.params.get("id"))
        if name == "details" and expense is not None:
            return self._details(ui, expense)
        if name == "edit":
            return self._edit(ui, expense)
        if name != "main":
            self.pop_to_root()
        return self._main(ui)

    def _main(self, ui: UI) -> View:
        t = ui.t
        now = self.phone.now
        total = self.money(self.total_cents(now.year, now.month))
        card = ui.col(
            ui.text("This month", 14, muted=True),
            ui.text(total, 32, bold=True, rid="month_total"),
            ui.text(now.strftime("%B %Y"), 14, muted=True),
            gap=4,
            pad=(20, 16, 20, 16),
        )
        card.bg, card.radius = t.primary_soft, ui.dp(16)
        body: list[View | None] = [ui.col(card, pad=(16, 8, 16, 8))]
        items = sorted(self.state.expenses, key=lambda e: (e.date, e.id), reverse=True)
        for e in items:
            amount = ui.text(self.money(e.amount_cents), 16, bold=True, rid="amount")
            body.append(
                ui.list_item(
                    e.title,
                    f"{e.category} · {e.date.strftime('%b %-d')}",
                    self._open(e.id),
                    trailing=amount,
                    rid="expense_item",
                )
            )
        if not items:
            body.append(ui.empty("No expenses yet"))
        return ui.page(
            "Expenses", body, back=False, fab=ui.fab("Add expense", self._new), scroll_key="expenses"
        )

    def _open(self, expense_id: int) -> Callable[[], None]:
        def run() -> None:
            self.push("details", id=expense_id)

        return run

    def _new(self) -> None:
        self.push("edit", id=None, category="Other", date=self.phone.now.date())

    def _edit(self, ui: UI, expense: Expense | None) -> View:
        p = self.screen.params

        def pick_category() -> None:
            self.show(
                dialogs.choice(self, "Category", CATEGORIES, p["category"], lambda c: p.update(category=c))
            )

        def pick_date() -> None:
            self.show(dialogs.date_picker(self, "Date", p["date"], lambda d: p.update(date=d)))

        def save() -> None:
            title = self.field("title").strip()
            cents = parse_amount(self.field("amount"))
            if not title:
                self.toast("Enter a title")
                return
            if cents is None:
                self.toast("Enter an amount")
                return
            note = self.field("note").strip()
            if expense is None:
                self.add_expense(title, cents, p["category"], p["date"], note)
            else:
                expense.title, expense.amount_cents, expense.category, expense.date, expense.note = (
                    title,
                    cents,
                    p["category"],
                    p["date"],
                    note,
                )
            self.pop()
            self.toast("Expense saved")

        body: list[View | None] = [
            ui.col(
                ui.edit("title", "Title", rid="title"),
                ui.edit("amount", "Amount", rid="amount", input_type="number"),
                gap=12,
                pad=(16, 8, 16, 8),
            ),
            ui.list_item("Category", p["category"], pick_category, rid="category"),
            ui.list_item("Date", dialogs.format_date(p["date"]), pick_date, rid="date"),
            ui.col(ui.edit("note", "Note", rid="note"), pad=(16, 8, 16, 8)),
        ]
        return ui.page(
            "Add expense" if expense is None else "Edit expense",
            body,
            actions=[ui.button("Save", save, rid="save")],
            scroll_key="edit",
        )

    def _details(self, ui: UI, e: Expense) -> View:
        def edit() -> None:
            self.push(
                "edit",
                fields={"title": e.title, "amount": f"{e.amount_cents / 100:.2f}", "note": e.note},
                id=e.id,
                category=e.category,
                date=e.date,
            )

        def delete() -> None:
            def really() -> None:
                self.state.expenses = [x for x in self.state.expenses if x.id != e.id]
                self.pop()
                self.toast("Expense deleted")

            self.show(
                dialogs.confirm(
                    self,
                    "Delete expense?",
                    f"“{e.title}” ({self.money(e.amount_cents)}) will be deleted.",
                    "Delete",
                    really,
                )
            )

        buttons = ui.row(
            ui.button("Edit", edit, style="tonal", rid="edit"),
            ui.button("Delete", delete, style="outlined", color=ui.t.danger, rid="delete"),
            gap=12,
            pad=(16, 16, 16, 16),
        )
        buttons.h = ui.dp(72)
        body: list[View | None] = [
            ui.text(self.money(e.amount_cents), 36, bold=True, pad=(16, 16, 16, 8), rid="amount"),
            ui.list_item(e.category, "Category", None, rid="category"),
            ui.list_item(dialogs.format_date(e.date), "Date", None, rid="date"),
            ui.list_item(e.note, "Note", None, rid="note") if e.note else None,
            buttons,
        ]
        return ui.page(e.title, body, scroll_key="details")
