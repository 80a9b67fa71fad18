"""Shop (``com.simphone.shop``, label ``Shop``): search, product page, options, cart, checkout.

State — :class:`ShopState`:
    ``cart``: list of :class:`CartItem` (``product_id``, ``name``, ``options`` e.g.
    ``{"Color": "Blue", "Size": "M"}``, ``qty``, ``unit_cents``); ``orders``: list of
    :class:`Order` (``id``, ``items``, ``total_cents``); ``next_order``; ``wishlist``:
    product ids. Products are :data:`.shop_catalog.CATALOG` (fixed; prices in cents).
    Helpers: :func:`.shop_catalog.product_by_name`, :meth:`ShopApp.cart_count`.

Screens:
    * ``main`` "Shop": EditText "Search products" (resource-id ``search_box``; ENTER searches),
      category chips ("Clothing", "Shoes", "Electronics", "Home", "Sports"), "Popular" items.
      App-bar ImageButton with content-desc "Cart, N items" opens the cart everywhere.
    * ``results`` "Results": header "N results for “query”", one item per product (title =
      product name, summary = ``$19.99 · ★ 4.5``).
    * ``product`` (title = product name): price (``price``), rating, description, one chip row
      per attribute with a header ("Color", "Size"; chips are checkable, checked = chosen),
      quantity "Decrease quantity" / "Increase quantity" buttons around the quantity text
      (``quantity``), "Add to cart" button (``add_to_cart``; asks for unchosen options with a
      toast "Select a Size"), "Add to wishlist"/"Remove from wishlist".
    * ``cart`` "Cart": one item per line (title = name, summary = options and quantity, a
      "Remove" button each), "Total: $…" (``cart_total``) and "Checkout" → confirm dialog
      "Place order?" (button "Place order") → ``orders`` gets the cart, which empties; toast
      "Order placed".
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.shop_catalog import (
    CATALOG,
    CATEGORIES,
    Product,
    product_by_id,
    product_by_name,
    search_products,
)
from agent_runtime.simphone.ui import dialogs
from agent_runtime.simphone.ui.view import View
from agent_runtime.simphone.ui.widgets import UI


@dataclass
class CartItem:
    product_id: int
    name: str
    options: dict[str, str] = field(default_factory=dict)
    qty: int = 1
    unit_cents: int = 0


@dataclass
class Order:
    id: int
    items: list[CartItem]
    total_cents: int


@dataclass
class ShopState:
    cart: list[CartItem] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    next_order: int = 1001
    wishlist: list[int] = field(default_factory=list)


def money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


class ShopApp(App):
    package = "com.simphone.shop"
    label = "Shop"
    activity = "com.simphone.shop.MainActivity"

    def initial_state(self, rng: random.Random) -> ShopState:
        return ShopState(wishlist=[rng.choice(CATALOG).id])

    def cart_count(self) -> int:
        return sum(i.qty for i in self.state.cart)

    def build(self, ui: UI) -> View:
        name = self.screen.name
        if name == "product":
            product = product_by_id(self.screen.params["id"])
            if product is not None:
                return self._product(ui, product)
        if name == "results":
            return self._results(ui, self.screen.params["query"])
        if name == "cart":
            return self._cart(ui)
        if name != "main":
            self.pop_to_root()
        return self._main(ui)

    def _cart_button(self, ui: UI) -> View:
        n = self.cart_count()
        return ui.icon_button("cart", f"Cart, {n} item{'s' * (n != 1)}", self._open_cart, rid="cart")

    def _open_cart(self) -> None:
        if self.screen.name != "cart":
            self.push("cart")

    def _search(self) -> None:
        query = self.field("search").strip()
        if query:
            self.push("results", fields={"search": query}, query=query)

    def _search_box(self, ui: UI) -> View:
        box = ui.edit("search", "Search products", rid="search_box", on_submit=self._search)
        box.radius = ui.dp(28)
        return ui.col(box, pad=(16, 4, 16, 8))

    def _item(self, ui: UI, p: Product) -> View:
        thumb = ui.avatar(p.name, (156, 39, 176) if p.category == "Clothing" else (0, 121, 107), 48)
        thumb.radius = ui.dp(8)
        return ui.list_item(
            p.name,
            f"{money(p.price_cents)} · ★ {p.rating}",
            self._open(p.id),
            leading=thumb,
            rid="product_item",
        )

    def _open(self, product_id: int) -> Callable[[], None]:
        def run() -> None:
            self.push("product", id=product_id, options={}, qty=1)

        return run

    def _main(self, ui: UI) -> View:
        def by_category(category: str) -> Callable[[], None]:
            def run() -> None:
                self.push("results", fields={"search": category}, query=category)

            return run

        chips = ui.row(
            *[ui.chip(c, False, by_category(c), rid="category_chip") for c in CATEGORIES[:3]],
            gap=8,
            pad=(16, 0, 16, 0),
        )
        chips.h = ui.dp(48)
        chips2 = ui.row(
            *[ui.chip(c, False, by_category(c), rid="category_chip") for c in CATEGORIES[3:]],
            gap=8,
            pad=(16, 0, 16, 0),
        )
        chips2.h = ui.dp(48)
        body: list[View | None] = [self._search_box(ui), chips, chips2, ui.section("Popular")]
        popular = sorted(CATALOG, key=lambda p: (-p.rating, p.id))[:8]
        body += [self._item(ui, p) for p in popular]
        return ui.page("Shop", body, back=False, actions=[self._cart_button(ui)], scroll_key="home")

    def _results(self, ui: UI, query: str) -> View:
        found = search_products(query)
        body: list[View | None] = [
            self._search_box(ui),
            ui.text(
                f"{len(found)} result{'s' * (len(found) != 1)} for “{query}”",
                14,
                muted=True,
                pad=(16, 4, 16, 4),
                rid="result_count",
            ),
        ]
        body += [self._item(ui, p) for p in found]
        if not found:
            body.append(ui.empty("Try a different search"))
        return ui.page("Results", body, actions=[self._cart_button(ui)], scroll_key="results")

    def _product(self, ui: UI, p: Product) -> View:
        params = self.screen.params
        options: dict[str, str] = params["options"]

        def choose(attr: str, value: str) -> Callable[[], None]:
            def run() -> None:
                options[attr] = value

            return run

        def qty(delta: int) -> Callable[[], None]:
            def run() -> None:
                params["qty"] = max(1, min(10, params["qty"] + delta))

            return run

        def add() -> None:
            for attr, _ in p.attributes:
                if attr not in options:
                    self.toast(f"Select a {attr}")
                    return
            chosen = {a: options[a] for a, _ in p.attributes}
            existing = next(
                (i for i in self.state.cart if i.product_id == p.id and i.options == chosen), None
            )
            if existing is not None:
                existing.qty += params["qty"]
            else:
                self.state.cart.append(CartItem(p.id, p.name, chosen, params["qty"], p.price_cents))
            self.toast("Added to cart")

        def wish() -> None:
            if p.id in self.state.wishlist:
                self.state.wishlist.remove(p.id)
            else:
                self.state.wishlist.append(p.id)

        body: list[View | None] = [
            ui.text(money(p.price_cents), 28, bold=True, pad=(16, 8, 16, 0), rid="price"),
            ui.text(f"★ {p.rating}  ·  {p.category}", 14, muted=True, pad=(16, 4, 16, 8), rid="rating"),
            ui.text(p.description, 16, lines=0, pad=(16, 4, 16, 8), rid="description"),
        ]
        for attr, values in p.attributes:
            chosen = options.get(attr)
            body.append(ui.section(f"{attr}: {chosen}" if chosen else attr))
            row = ui.row(
                *[ui.chip(v, v == chosen, choose(attr, v), rid=f"{attr.lower()}_option") for v in values],
                gap=8,
                pad=(16, 0, 16, 0),
            )
            row.h = ui.dp(48)
            body.append(row)
        qty_row = ui.row(
            ui.text("Quantity", 16),
            ui.spacer(weight=1.0),
            ui.icon_button("minus", "Decrease quantity", qty(-1), rid="qty_minus"),
            ui.text(str(params["qty"]), 18, align="center", rid="quantity"),
            ui.icon_button("plus", "Increase quantity", qty(1), rid="qty_plus"),
            gap=8,
            pad=(16, 8, 16, 8),
        )
        qty_row.h = ui.dp(64)
        body.append(qty_row)
        body.append(ui.col(ui.button("Add to cart", add, rid="add_to_cart"), pad=(16, 8, 16, 4)))
        body.append(
            ui.col(
                ui.button(
                    "Remove from wishlist" if p.id in self.state.wishlist else "Add to wishlist",
                    wish,
                    style="outlined",
                    rid="wishlist",
                ),
                pad=(16, 4, 16, 16),
            )
        )
        return ui.page(p.name, body, actions=[self._cart_button(ui)], scroll_key="product")

    def _cart(self, ui: UI) -> View:
        total = sum(i.qty * i.unit_cents for i in self.state.cart)

        def remove(index: int) -> Callable[[], None]:
            def run() -> None:
                if 0 <= index < len(self.state.cart):
                    del self.state.cart[index]

            return run

        def checkout() -> None:
            if not self.state.cart:
                self.toast("Your cart is empty")
                return

            def place() -> None:
                order = Order(self.state.next_order, list(self.state.cart), total)
                self.state.orders.append(order)
                self.state.next_order += 1
                self.state.cart = []
                self.toast("Order placed")

            self.show(dialogs.confirm(self, "Place order?", f"Total: {money(total)}", "Place order", place))

        body: list[View | None] = []
        for i, item in enumerate(self.state.cart):
            opts = ", ".join(f"{k}: {v}" for k, v in item.options.items())
            summary = f"{opts} · Qty {item.qty}" if opts else f"Qty {item.qty}"
            body.append(
                ui.list_item(
                    item.name,
                    summary,
                    None,
                    trailing=ui.button("Remove", remove(i), style="text", rid="remove"),
                    rid="cart_item",
                )
            )
        if not self.state.cart:
            body.append(ui.empty("Your cart is empty"))
        footer = ui.row(
            ui.text(f"Total: {money(total)}", 18, bold=True, rid="cart_total"),
            ui.spacer(weight=1.0),
            ui.button("Checkout", checkout, rid="checkout"),
            pad=(16, 8, 16, 8),
        )
        footer.h = ui.dp(72)
        footer.bg = ui.t.surface
        return ui.page("Cart", body, footer=footer, scroll_key="cart")


#: The catalogue helpers are re-exported so tasks can import everything Shop from here.
__all__ = [
    "CATALOG",
    "CATEGORIES",
    "CartItem",
    "Order",
    "Product",
    "ShopApp",
    "ShopState",
    "money",
    "product_by_id",
    "product_by_name",
    "search_products",
]
