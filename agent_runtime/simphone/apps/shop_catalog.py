"""The Shop's fixed catalogue: 16 products in five categories, prices in cents.

Products with ``attributes`` need every attribute chosen (e.g. Color and Size) before they can
be added to the cart — the ReachAgent-style "choose an option, then act" flow.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Product:
    id: int
    name: str
    category: str
    price_cents: int
    rating: float
    description: str
    attributes: tuple[tuple[str, tuple[str, ...]], ...] = ()


_SIZES = ("S", "M", "L", "XL")
CATALOG: tuple[Product, ...] = (
    Product(
        1,
        "Classic T-Shirt",
        "Clothing",
        1999,
        4.5,
        "Soft cotton crew-neck tee.",
        (("Color", ("White", "Black", "Red", "Blue")), ("Size", _SIZES)),
    ),
    Product(
        2,
        "Hoodie",
        "Clothing",
        4499,
        4.6,
        "Fleece hoodie with a front pocket.",
        (("Color", ("Grey", "Black", "Green")), ("Size", _SIZES)),
    ),
    Product(
        3,
        "Slim Jeans",
        "Clothing",
        5999,
        4.2,
        "Stretch denim, slim fit.",
        (("Color", ("Blue", "Black")), ("Size", ("28", "30", "32", "34", "36"))),
    ),
    Product(
        4,
        "Rain Jacket",
        "Clothing",
        7999,
        4.4,
        "Waterproof, packable shell.",
        (("Color", ("Yellow", "Navy", "Black")), ("Size", _SIZES)),
    ),
    Product(
        5,
        "Running Shoes",
        "Shoes",
        8999,
        4.7,
        "Lightweight shoes with a cushioned sole.",
        (("Color", ("Black", "White", "Blue")), ("Size", ("7", "8", "9", "10", "11"))),
    ),
    Product(
        6,
        "Canvas Sneakers",
        "Shoes",
        4999,
        4.3,
        "Everyday low-top sneakers.",
        (("Color", ("White", "Red", "Black")), ("Size", ("6", "7", "8", "9", "10"))),
    ),
    Product(
        7,
        "Wireless Headphones",
        "Electronics",
        12999,
        4.6,
        "Noise cancelling, 30-hour battery.",
        (("Color", ("Black", "Silver")),),
    ),
    Product(
        8,
        "Phone Case",
        "Electronics",
        1499,
        4.1,
        "Shock-absorbing clear case.",
        (("Color", ("Clear", "Black", "Pink")),),
    ),
    Product(9, "USB-C Charger", "Electronics", 2499, 4.5, "30 W fast charger.", ()),
    Product(
        10,
        "Smart Watch",
        "Electronics",
        19999,
        4.4,
        "Heart rate, GPS and sleep tracking.",
        (("Color", ("Black", "Rose Gold", "Silver")), ("Size", ("40 mm", "44 mm"))),
    ),
    Product(
        11, "Coffee Mug", "Home", 1299, 4.8, "Ceramic mug, 350 ml.", (("Color", ("White", "Blue", "Green")),)
    ),
    Product(
        12,
        "Desk Lamp",
        "Home",
        3499,
        4.3,
        "LED lamp with three brightness levels.",
        (("Color", ("White", "Black")),),
    ),
    Product(
        13,
        "Water Bottle",
        "Sports",
        1999,
        4.7,
        "Insulated steel bottle, 750 ml.",
        (("Color", ("Blue", "Black", "Orange")), ("Size", ("500 ml", "750 ml", "1 L"))),
    ),
    Product(
        14,
        "Yoga Mat",
        "Sports",
        2999,
        4.5,
        "Non-slip mat, 6 mm thick.",
        (("Color", ("Purple", "Blue", "Black")),),
    ),
    Product(
        15,
        "Backpack",
        "Sports",
        5499,
        4.6,
        "25 L daypack with a laptop sleeve.",
        (("Color", ("Black", "Grey", "Red")),),
    ),
    Product(
        16, "Sunglasses", "Sports", 2499, 4.0, "Polarised lenses, UV400.", (("Color", ("Black", "Tortoise")),)
    ),
)
CATEGORIES = ("Clothing", "Shoes", "Electronics", "Home", "Sports")


def product_by_id(product_id: int) -> Product | None:
    return next((p for p in CATALOG if p.id == product_id), None)


def product_by_name(name: str) -> Product | None:
    wanted = name.strip().lower()
    return next((p for p in CATALOG if p.name.lower() == wanted), None)


def search_products(query: str) -> list[Product]:
    words = [w for w in query.lower().split() if w]
    if not words:
        return []
    found = []
    for p in CATALOG:
        hay = f"{p.name} {p.category} {p.description}".lower()
        if all(w.rstrip("s") in hay for w in words):
            found.append(p)
    return found
