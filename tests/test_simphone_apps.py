"""Each SimPhone app's main flow, driven through the UI like an agent would, changes its state."""

from __future__ import annotations

import datetime as dt

import pytest

from agent_runtime.actions import Type
from agent_runtime.observation import parse_ui_xml
from agent_runtime.simphone import SimPhone


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(seed=5)


def texts(phone: SimPhone) -> set[str]:
    return {t for e in parse_ui_xml(phone.ui_xml()) for t in (e.text, e.content_desc) if t}


def type_into(phone: SimPhone, field: str, text: str) -> None:
    phone.tap_on(field, cls="EditText")
    assert phone.execute(Type(text=text, clear=True)).ok


def test_settings_wifi_bluetooth_and_font_size(phone: SimPhone) -> None:
    state = phone.app("com.android.settings").state
    phone.launch("com.android.settings")
    phone.tap_on("Network & internet")
    switch = next(
        e
        for e in parse_ui_xml(phone.ui_xml())
        if e.class_name == "android.widget.Switch" and e.content_desc == "Wi-Fi"
    )
    phone.tap(*switch.bounds.center)
    assert state.wifi is False and state.wifi_network == ""
    assert "Wifi signal full." not in texts(phone)  # status bar icon gone
    phone.tap_on("Wi-Fi")  # the row opens the Wi-Fi page
    phone.tap_on("Use Wi-Fi")
    target = state.networks[2]
    phone.tap_on(target)
    assert state.wifi and state.wifi_network == target
    phone.back()
    phone.back()
    phone.tap_on("Connected devices")
    phone.tap_on("Bluetooth")
    assert state.bluetooth is True and "Bluetooth on" in texts(phone)
    phone.back()
    phone.tap_on("Display")
    phone.tap_on("Font size")
    phone.tap_on("Largest")
    assert state.font_scale == 1.3


def test_clock_add_edit_toggle_delete_alarm(phone: SimPhone) -> None:
    clock = phone.app("com.android.deskclock")
    before = len(clock.state.alarms)
    phone.launch("com.android.deskclock")
    phone.tap_on("Add alarm")
    type_into(phone, "hour", "6")
    type_into(phone, "minute", "45")
    phone.tap_on("PM")
    phone.tap_on("OK")
    alarm = clock.find_alarm(18, 45)
    assert alarm is not None and alarm.enabled and len(clock.state.alarms) == before + 1
    assert "6:45 PM" in texts(phone)
    switch = phone.find("6:45 PM", clickable=True)
    switch = next(
        e
        for e in parse_ui_xml(phone.ui_xml())
        if e.class_name == "android.widget.Switch" and e.content_desc == "6:45 PM"
    )
    phone.tap(*switch.bounds.center)
    assert alarm.enabled is False
    phone.tap_on("6:45 PM")
    assert "Edit alarm" in texts(phone)
    type_into(phone, "edit_label", "Dinner")
    phone.tap_on("Mon")
    phone.tap_on("Increase hour") if phone.find("Increase hour") else None
    phone.back()  # hide keyboard
    phone.back()  # leave: label saved
    assert alarm.label == "Dinner" and alarm.days == ["Mon"]
    phone.tap_on("6:45 PM")
    phone.tap_on("Time")
    phone.tap_on("Increase hour")
    phone.tap_on("OK")
    assert (alarm.hour, alarm.minute) == (19, 45)
    phone.tap_on("Delete")
    assert clock.find_alarm(19, 45) is None
    phone.tap_on("Timer")
    type_into(phone, "timer_minutes", "2")
    phone.tap_on("Start")
    assert clock.state.timer_end == phone.now + dt.timedelta(minutes=2)
    phone.advance_time(60)
    assert "01:00" in texts(phone)


def test_contacts_create_search_details_delete(phone: SimPhone) -> None:
    contacts = phone.app("com.android.contacts")
    phone.launch("com.android.contacts")
    phone.tap_on("Create contact")
    phone.tap_on("Save")
    assert "Enter a name or a phone number" in texts(phone)  # toast
    type_into(phone, "first_name", "Grace")
    type_into(phone, "last_name", "Hopper")
    type_into(phone, "phone", "+1 555-010-1906")
    phone.tap_on("Save")
    grace = contacts.find("Grace Hopper")
    assert grace is not None and grace.phone == "+1 555-010-1906"
    assert "Grace Hopper" in texts(phone)  # now on the details page
    phone.back()
    type_into(phone, "search_box", "hopper")
    assert "Grace Hopper" in texts(phone)
    assert len([e for e in parse_ui_xml(phone.ui_xml()) if e.resource_id.endswith("contact_item")]) == 1
    phone.back()
    phone.tap_on("Grace Hopper")
    phone.tap_on("Delete")
    assert "Delete contact?" in texts(phone)
    phone.tap_on("button2")
    assert contacts.find("Grace Hopper") is None


def test_messages_compose_to_contact_and_send(phone: SimPhone) -> None:
    contact = phone.app("com.android.contacts").state.contacts[4]
    messages = phone.app("com.android.messaging")
    phone.launch("com.android.messaging")
    phone.tap_on("Start chat")
    assert phone.focused_field() == "to"
    phone.execute(Type(text=contact.first))
    phone.tap_on(contact.name)
    assert contact.name in texts(phone)
    type_into(phone, "compose_message_text", "See you at 7?")
    phone.tap_on("Send SMS")
    thread = messages.thread_with(contact.name)
    assert thread is not None and thread.messages[-1].outgoing and thread.messages[-1].text == "See you at 7?"
    assert "See you at 7?" in texts(phone)
    phone.back()
    phone.back()
    assert "You: See you at 7?" in texts(phone)


def test_contacts_text_button_opens_conversation(phone: SimPhone) -> None:
    contact = sorted(phone.app("com.android.contacts").state.contacts, key=lambda c: c.name)[0]
    phone.launch("com.android.contacts")
    phone.tap_on(contact.name)
    phone.tap_on("Text")
    assert phone.current_focus() == (
        "com.android.messaging",
        "com.android.messaging.ui.conversation.ConversationActivity",
    )
    assert phone.find("compose_message_text") is not None


def test_calendar_add_event_on_a_date(phone: SimPhone) -> None:
    cal = phone.app("com.android.calendar")
    today = phone.now.date()
    target = today.replace(day=28) if today.day != 28 else today.replace(day=27)
    phone.launch("com.android.calendar")
    phone.tap_on("New event")
    type_into(phone, "title", "Piano lesson")
    phone.back()
    phone.tap_on("Date")
    phone.tap_on(f"{target.day} {target.strftime('%B')} {target.year}")
    phone.tap_on("OK")
    phone.tap_on("Start time")
    type_into(phone, "hour", "4")
    phone.tap_on("PM")
    phone.tap_on("OK")
    phone.tap_on("save")
    events = cal.events_on(target)
    assert [e.title for e in events if e.title == "Piano lesson"]
    event = next(e for e in events if e.title == "Piano lesson")
    assert event.start == (16, 0) and event.end == (17, 0)
    assert "Piano lesson" in texts(phone)  # the calendar shows the chosen day
    phone.tap_on("Piano lesson")
    phone.tap_on("Delete")
    phone.tap_on("button2")
    assert not [e for e in cal.events_on(target) if e.title == "Piano lesson"]


def test_browser_search_open_result_bookmark(phone: SimPhone) -> None:
    browser = phone.app("com.android.browser")
    phone.launch("com.android.browser")
    phone.tap_on("url_bar")
    phone.execute(Type(text="highest mountain", enter=True))
    assert "Mount Everest - SimWiki" in texts(phone)
    phone.tap_on("Mount Everest - SimWiki")
    assert browser.state.current_url == "https://simwiki.org/wiki/Mount_Everest"
    assert any("8,849 metres" in t for t in texts(phone))
    phone.tap_on("Bookmark")
    assert browser.state.current_url in browser.state.bookmarks
    phone.back()
    assert browser.state.current_url == ""
    assert browser.state.history == ["search:highest mountain", "https://simwiki.org/wiki/Mount_Everest"]
    phone.tap_on("url_bar")
    phone.execute(Type(text="nowhere.example", clear=True, enter=True))
    assert "This site can't be reached" in texts(phone)


def test_notes_create_edit_pin_delete(phone: SimPhone) -> None:
    notes = phone.app("com.simphone.notes")
    phone.launch("com.simphone.notes")
    phone.tap_on("New note")
    assert phone.focused_field() == "body"
    phone.execute(Type(text="buy stamps"))
    phone.key(66)
    phone.execute(Type(text="call plumber"))
    type_into(phone, "note_title", "Errands")
    phone.back()
    phone.back()
    note = notes.find("Errands")
    assert note is not None and note.body == "buy stamps\ncall plumber"
    phone.tap_on("Errands")
    phone.tap_on("Pin")
    assert note.pinned
    phone.tap_on("Save")
    first = next(e for e in parse_ui_xml(phone.ui_xml()) if e.resource_id.endswith("note_item"))
    phone.long_press(*first.bounds.center)
    assert "Delete note?" in texts(phone)
    phone.tap_on("button2")
    assert notes.find("Errands") is None


def test_expenses_add_and_total(phone: SimPhone) -> None:
    app = phone.app("com.simphone.expenses")
    now = phone.now
    before = app.total_cents(now.year, now.month)
    phone.launch("com.simphone.expenses")
    phone.tap_on("Add expense")
    type_into(phone, "title", "Lunch")
    type_into(phone, "amount", "12.5x")
    phone.tap_on("Save")
    assert app.find("Lunch") is None and "Enter an amount" in texts(phone)
    type_into(phone, "amount", "12.50")
    phone.back()
    phone.tap_on("Category")
    phone.tap_on("Food")
    phone.tap_on("Save")
    lunch = app.find("Lunch")
    assert (
        lunch is not None
        and lunch.amount_cents == 1250
        and lunch.category == "Food"
        and lunch.date == now.date()
    )
    assert app.money(before + 1250) in texts(phone)


def test_shop_search_choose_options_add_to_cart_checkout(phone: SimPhone) -> None:
    shop = phone.app("com.simphone.shop")
    phone.launch("com.simphone.shop")
    type_into(phone, "search_box", "t-shirt")
    phone.key(66)
    phone.tap_on("Classic T-Shirt")
    phone.tap_on("Add to cart")
    assert shop.state.cart == [] and "Select a Color" in texts(phone)
    phone.tap_on("Blue")
    chip = next(e for e in parse_ui_xml(phone.ui_xml()) if e.text == "Blue")
    assert chip.has("checked")
    phone.swipe(540, 1800, 540, 1200)
    phone.tap_on("L")
    phone.tap_on("Increase quantity")
    phone.tap_on("Add to cart")
    assert len(shop.state.cart) == 1
    item = shop.state.cart[0]
    assert (item.name, item.options, item.qty) == ("Classic T-Shirt", {"Color": "Blue", "Size": "L"}, 2)
    phone.tap_on("Cart, 2 items")
    assert "Total: $39.98" in texts(phone)
    phone.tap_on("Checkout")
    phone.tap_on("Place order")
    assert shop.state.cart == [] and shop.state.orders[-1].total_cents == 3998
