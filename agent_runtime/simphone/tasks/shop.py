"""Shop tasks: add to cart with attributes and quantity, check out, wishlist, cart edits, prices.

State and screens are documented in :mod:`agent_runtime.simphone.apps.shop`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_runtime.actions import Action
from agent_runtime.simphone.apps.shop import CATALOG, CartItem, Product, ShopApp, product_by_id
from agent_runtime.simphone.tasks.base import QuestionTask, Task
from agent_runtime.simphone.tasks.common import REACH_VERBS, showing
from agent_runtime.simphone.tasks.oracle import OracleUI

if TYPE_CHECKING:
    from agent_runtime.simphone.phone import SimPhone

PACKAGE = "com.simphone.shop"
APP = "Shop"


def shop(phone: SimPhone) -> ShopApp:
    app = phone.app(PACKAGE)
    assert isinstance(app, ShopApp)
    return app


def product(pid: int) -> Product:
    found = product_by_id(pid)
    assert found is not None, pid
    return found


def options_text(options: dict[str, str]) -> str:
    """``{"Color": "Blue", "Size": "M"}`` → ``"Blue, size M"``."""
    parts = [f"{k.lower()} {v}" if k != "Color" else v for k, v in options.items()]
    return ", ".join(parts)


def random_choice(rng: random.Random, *, with_options: bool = True) -> dict[str, Any]:
    """A product (with attributes when ``with_options``) and a value for each attribute."""
    pool = [p for p in CATALOG if p.attributes] if with_options else list(CATALOG)
    p = rng.choice(pool)
    options = {attr: rng.choice(values) for attr, values in p.attributes}
    return {"product_id": p.id, "product": p.name, "options": options, "options_text": options_text(options)}


def line(pid: int, options: dict[str, str], qty: int = 1) -> CartItem:
    p = product(pid)
    return CartItem(p.id, p.name, dict(options), qty, p.price_cents)


def open_product(ui: OracleUI, name: str) -> Iterator[Action]:
    """Open Shop, search for ``name`` and open its product page."""
    yield ui.open_app(APP)
    yield from ui.type_into(None, name, rid="search_box", enter=True)
    yield from ui.tap(name, rid="title", cls="TextView")


def choose_options(ui: OracleUI, options: dict[str, str]) -> Iterator[Action]:
    for attr, value in options.items():
        yield from ui.tap(value, rid=f"{attr.lower()}_option")


def open_cart(ui: OracleUI) -> Iterator[Action]:
    yield from ui.tap(where=lambda el: el.content_desc.startswith("Cart,"))


class ShopAddToCart(Task):
    template = "Add the {product} ({options_text}) to my shopping cart."
    app_names = (APP,)
    complexity = 1.2

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_choice(rng)

    def setup(self, phone: SimPhone) -> None:
        shop(phone).state.cart = []

    def quantity(self, phone: SimPhone) -> int:
        return sum(
            i.qty
            for i in shop(phone).state.cart
            if i.product_id == self.params["product_id"] and i.options == self.params["options"]
        )

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if self.quantity(phone) >= 1 else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_product(ui, self.params["product"])
        yield from choose_options(ui, self.params["options"])
        yield from ui.tap("Add to cart", rid="add_to_cart")


class ShopAddQuantity(ShopAddToCart):
    template = "Put {qty} of the {product} ({options_text}) in my cart."
    complexity = 1.5

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {**random_choice(rng), "qty": rng.randint(2, 4)}

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if self.quantity(phone) == self.params["qty"] else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_product(ui, self.params["product"])
        yield from choose_options(ui, self.params["options"])
        for _ in range(self.params["qty"] - 1):
            yield from ui.tap(desc="Increase quantity")
        yield from ui.tap("Add to cart", rid="add_to_cart")


class ShopBuy(ShopAddToCart):
    template = "Buy the {product} ({options_text}): add it to the cart and place the order."
    complexity = 2.0

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        p = self.params
        ok = any(
            i.product_id == p["product_id"] and i.options == p["options"]
            for order in shop(phone).state.orders
            for i in order.items
        )
        return 1.0 if ok else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from super().solve(ui)
        yield from open_cart(ui)
        yield from ui.tap("Checkout", rid="checkout")
        yield from ui.dialog_button("Place order")


class ShopWishlist(Task):
    template = "Add the {product} to my wishlist in the Shop app."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_choice(rng, with_options=False)

    def setup(self, phone: SimPhone) -> None:
        state = shop(phone).state
        state.wishlist = [pid for pid in state.wishlist if pid != self.params["product_id"]]

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if self.params["product_id"] in shop(phone).state.wishlist else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_product(ui, self.params["product"])
        yield from ui.tap("Add to wishlist", rid="wishlist")


class ShopRemoveFromCart(Task):
    template = "Remove the {product} from my shopping cart."
    app_names = (APP,)
    complexity = 0.8

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        picks = [random_choice(rng, with_options=False)]
        while len(picks) < 3:
            pick = random_choice(rng, with_options=False)
            if pick["product_id"] not in {p["product_id"] for p in picks}:
                picks.append(pick)
        first = picks[0]
        return {
            **first,
            "others": [{"product_id": p["product_id"], "options": p["options"]} for p in picks[1:]],
        }

    def setup(self, phone: SimPhone) -> None:
        p = self.params
        lines = [line(p["product_id"], p["options"])] + [
            line(o["product_id"], o["options"]) for o in p["others"]
        ]
        self.rng().shuffle(lines)
        shop(phone).state.cart = lines

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        left = sorted(i.product_id for i in shop(phone).state.cart)
        return 1.0 if left == sorted(o["product_id"] for o in self.params["others"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from open_cart(ui)
        yield from ui.scroll_to(self.params["product"], rid="title")
        yield ui.click(ui.in_row(self.params["product"], row_rid="cart_item", text="Remove"))


class ShopReachProduct(Task):
    template = "{verb} the product page of the {product} in the Shop app."
    app_names = (APP,)
    complexity = 0.6
    kind = "page_reaching"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return {"verb": rng.choice(REACH_VERBS), **random_choice(rng, with_options=False)}

    def setup(self, phone: SimPhone) -> None:
        phone.home()

    def is_successful(self, phone: SimPhone, answer: str | None = None) -> float:
        return 1.0 if showing(phone, PACKAGE, "product", id=self.params["product_id"]) else 0.0

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_product(ui, self.params["product"])


class ShopPriceQuestion(QuestionTask):
    template = "How much does the {product} cost in the Shop app?"
    app_names = (APP,)
    complexity = 0.6
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        return random_choice(rng, with_options=False)

    def setup(self, phone: SimPhone) -> None:
        phone.home()

    def expected_answer(self) -> str:
        return f"{product(self.params['product_id']).price_cents / 100:.2f}"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield from open_product(ui, self.params["product"])
        yield ui.answer(ui.require(rid="price").text)


class ShopCartTotalQuestion(QuestionTask):
    template = "What is the total of my shopping cart right now?"
    app_names = (APP,)
    complexity = 0.5
    match = "number"

    @classmethod
    def generate_random_params(cls, rng: random.Random) -> dict[str, Any]:
        n = rng.randint(1, 3)
        return {
            "lines": [{**random_choice(rng, with_options=False), "qty": rng.randint(1, 3)} for _ in range(n)]
        }

    def setup(self, phone: SimPhone) -> None:
        shop(phone).state.cart = [line(x["product_id"], x["options"], x["qty"]) for x in self.params["lines"]]

    def expected_answer(self) -> str:
        cents = sum(product(x["product_id"]).price_cents * x["qty"] for x in self.params["lines"])
        return f"{cents / 100:.2f}"

    def solve(self, ui: OracleUI) -> Iterator[Action]:
        yield ui.open_app(APP)
        yield from open_cart(ui)
        yield ui.answer(ui.require(rid="cart_total").text)


#: This module's templates; :mod:`.registry` lists them by name.
TEMPLATES: tuple[type[Task], ...] = (
    ShopAddToCart,
    ShopAddQuantity,
    ShopBuy,
    ShopWishlist,
    ShopRemoveFromCart,
    ShopReachProduct,
    ShopPriceQuestion,
    ShopCartTotalQuestion,
)
