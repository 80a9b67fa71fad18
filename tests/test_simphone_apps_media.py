"""The Files, Gallery, Music and Recorder apps driven through their screens, and their templates:
every one solved by the expert on both splits without side effects, checks that fail when the
goal is not met, typed answers compared exactly, and the held-out rule over the batch."""

from __future__ import annotations

import datetime as dt

import pytest

from agent_runtime.actions import Type
from agent_runtime.evaluation import ExpertPolicy
from agent_runtime.observation import parse_ui_xml
from agent_runtime.simphone import SimPhone
from agent_runtime.simphone.apps.files import FilesApp, format_size
from agent_runtime.simphone.apps.gallery import GalleryApp
from agent_runtime.simphone.apps.music import MusicApp
from agent_runtime.simphone.apps.recorder import RecorderApp, format_duration
from agent_runtime.simphone.tasks import batches, make_task, registry, task_instances
from agent_runtime.simphone.tasks.registry import TEMPLATE_HELDOUT, Split, held_out_templates

APPS = ("Files", "Gallery", "Music", "Recorder")
MEDIA = sorted(n for n, cls in registry().items() if cls.app_names[0] in APPS)


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(seed=4)


def texts(phone: SimPhone) -> set[str]:
    return {t for e in parse_ui_xml(phone.ui_xml()) for t in (e.text, e.content_desc) if t}


def type_in(phone: SimPhone, rid: str, text: str) -> None:
    field = next(e for e in parse_ui_xml(phone.ui_xml()) if e.resource_id.endswith(f"/{rid}"))
    phone.tap(*field.bounds.center)
    assert phone.execute(Type(text=text, clear=True)).ok


def test_files_browse_create_rename_move_delete_and_search(phone: SimPhone) -> None:
    app = phone.app("com.simphone.files")
    assert isinstance(app, FilesApp)
    item = app.add_file("notes.pdf", "Documents", 2458, phone.now - dt.timedelta(days=3))
    phone.launch(app.package)
    assert {"Documents", "Download", "New folder"} <= texts(phone)
    phone.tap_on("New folder")
    type_in(phone, "input", "Taxes")
    phone.tap_on("Create")
    assert "Taxes" in app.state.folders and "Taxes" in texts(phone)
    phone.tap_on("Documents")
    assert f"2.4 MB · {item.modified:%b} {item.modified.day}, {item.modified.year}" in texts(phone)
    phone.tap_on("notes.pdf")
    assert {"2.4 MB", "Internal storage/Documents"} <= texts(phone)
    phone.tap_on("Rename")
    type_in(phone, "input", "tax-notes.pdf")
    phone.tap_on("button2")
    assert item.name == "tax-notes.pdf"
    phone.tap_on("Move")
    phone.tap_on("Taxes")
    assert item.folder == "Taxes" and "Internal storage/Taxes" in texts(phone)
    phone.tap_on("Delete")
    phone.tap_on("button2")
    assert item not in app.state.files
    phone.back()  # from the folder to the folder list
    type_in(phone, "search_box", "boarding")
    rows = [e for e in parse_ui_xml(phone.ui_xml()) if e.resource_id.endswith("/file_item")]
    assert [r.content_desc for r in rows] == ["boarding-pass.pdf"]
    assert format_size(512) == "512 KB" and format_size(10240) == "10.0 MB"


def test_gallery_albums_favorite_move_delete_and_share(phone: SimPhone) -> None:
    app = phone.app("com.simphone.gallery")
    assert isinstance(app, GalleryApp)
    photo = app.add_photo("Harbor at noon", "Camera", phone.now - dt.timedelta(days=2), "Oslo")
    phone.launch(app.package)
    phone.tap_on("New album")
    type_in(phone, "input", "Trips")
    phone.tap_on("Create")
    assert "Trips" in app.state.albums
    phone.tap_on("Camera")
    phone.tap_on("Harbor at noon")
    assert {"Oslo", "Camera"} <= texts(phone)
    phone.tap_on("Favorite")
    assert photo.favorite and "Unfavorite" in texts(phone)
    phone.tap_on("Move to album")
    phone.tap_on("Trips")
    assert photo.album == "Trips"
    phone.back()
    phone.back()
    phone.tap_on("Favorites")
    assert "Harbor at noon" in texts(phone)
    phone.tap_on("Harbor at noon")
    contact = phone.app("com.android.contacts").state.contacts[0]
    phone.tap_on("Share")
    type_in(phone, "input", contact.name)
    phone.tap_on("Send")
    assert phone.current_focus()[0] == "com.android.messaging"
    phone.tap_on("Send SMS")
    thread = phone.app("com.android.messaging").thread_with(contact.name)  # type: ignore[attr-defined]
    assert thread.messages[-1].outgoing and thread.messages[-1].text == "Photo: Harbor at noon"
    phone.launch(app.package)
    phone.tap_on("Delete")
    phone.tap_on("button2")
    assert photo not in app.state.photos


def test_music_play_menu_playlists_and_player_modes(phone: SimPhone) -> None:
    app = phone.app("com.simphone.music")
    assert isinstance(app, MusicApp)
    s = app.state
    phone.launch(app.package)
    phone.tap_on("Playlists")
    phone.tap_on("New playlist")
    type_in(phone, "input", "Evening")
    phone.tap_on("Create")
    assert app.playlist("Evening") is not None
    phone.tap_on("Songs")
    type_in(phone, "search_box", "Lanterns")
    more = next(e for e in parse_ui_xml(phone.ui_xml()) if e.content_desc == "More options")
    phone.tap(*more.bounds.center)
    phone.tap_on("Add to playlist")
    phone.tap_on("Evening")
    lanterns = next(x for x in s.songs if x.title == "Lanterns")
    assert app.playlist("Evening").song_ids == [lanterns.id]  # type: ignore[union-attr]
    row = next(e for e in parse_ui_xml(phone.ui_xml()) if e.resource_id.endswith("/song_item"))
    phone.tap(*row.bounds.center)
    assert s.now_playing == lanterns.id and s.playing and "Now playing" in texts(phone)
    phone.tap_on("Pause")
    assert not s.playing
    phone.tap_on("Shuffle off")
    assert s.shuffle and "Shuffle on" in texts(phone)
    for mode in ("all", "one", "off"):
        phone.tap_on(f"Repeat {s.repeat}")
        assert s.repeat == mode
    phone.tap_on("Like")
    assert lanterns.liked
    phone.back()
    phone.back()  # clears the search
    phone.tap_on("Artists")
    phone.tap_on("Dune Radio")
    assert {"Copper Sky", "Northbound"} <= texts(phone)


def test_recorder_records_virtual_time_then_renames_plays_and_deletes(phone: SimPhone) -> None:
    app = phone.app("com.simphone.recorder")
    assert isinstance(app, RecorderApp)
    before = len(app.state.recordings)
    phone.launch(app.package)
    phone.tap_on("Start recording")
    phone.advance_time(75)
    assert "1:15" in texts(phone)  # the elapsed time on screen
    phone.tap_on("Stop recording")
    new = app.state.recordings[-1]
    assert len(app.state.recordings) == before + 1 and new.seconds == 75 and new.name == "Recording 1"
    assert app.state.recording_since is None
    phone.tap_on("Recording 1")
    assert "1:15" in texts(phone)
    phone.tap_on("Play")
    assert app.state.playing == new.id
    phone.tap_on("Rename")
    type_in(phone, "input", "Idea")
    phone.tap_on("button2")
    assert new.name == "Idea"
    phone.tap_on("Delete")
    phone.tap_on("button2")
    assert new not in app.state.recordings and app.state.playing is None
    assert format_duration(3725) == "1:02:05"


def test_the_batch_has_ten_templates_per_app_and_six_across_apps() -> None:
    per_app = {app: [n for n in MEDIA if registry()[n].app_names[0] == app] for app in APPS}
    assert all(len(names) >= 10 for names in per_app.values()), per_app
    for names in per_app.values():
        typed = {registry()[n].match for n in names if registry()[n].answer_task}  # type: ignore[attr-defined]
        assert len(typed) >= 2 and typed & {"number", "date", "list"}
    across = [n for n in MEDIA if len(registry()[n].app_names) > 1]
    assert len(across) >= 6 and all(set(registry()[n].app_names) - set(APPS) for n in across)


def test_held_out_templates_are_the_rule_over_this_batch() -> None:
    assert sorted(batches.MEDIA) == MEDIA
    held = held_out_templates(batches.MEDIA)
    assert set(held) <= TEMPLATE_HELDOUT and len(held) == 10
    assert not (set(MEDIA) - set(held)) & TEMPLATE_HELDOUT


@pytest.mark.parametrize("split", ["train", "test"])
def test_the_expert_solves_every_template_without_side_effects(split: Split) -> None:
    expert = ExpertPolicy(screenshots=False)
    for task in task_instances(MEDIA, split=split, episodes=2):
        phone = SimPhone(seed=task.seed)
        task.setup(phone)
        before = phone.state()
        assert task.is_successful(phone, None) == 0.0, f"{task} is already met after setup"
        outcome = expert(task, phone)
        verdict = task.judge(phone, outcome.answer, before)
        assert verdict.goal_score == 1.0 and not verdict.side_effects, (task, outcome, verdict)


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("FilesNewestDateQuestion", lambda a: a.replace(",", ""), lambda a: "January 1, 2020"),
        ("GalleryPhotoDateQuestion", lambda a: a.rsplit(",", 1)[0], lambda a: a + " or March 3"),
        ("RecorderLongQuestion", lambda a: " and ".join(reversed(a.split(", "))), lambda a: a + ", Bird"),
        ("MusicArtistSongsQuestion", lambda a: a.upper(), lambda a: a.split(", ")[0] + ", Harbor Lights"),
        ("FilesSizeQuestion", lambda a: f"It is {a}", lambda a: f"{a} or 2 MB"),
        ("RecorderDurationQuestion", lambda a: f"{a} seconds", lambda a: str(int(a) + 1)),
    ],
)  # fmt: skip
def test_typed_answers_are_checked_exactly(name: str, good, bad) -> None:  # type: ignore[no-untyped-def]
    task = make_task(name, 3)
    task.setup(SimPhone(seed=3))
    expected = task.expected_answer()
    assert expected is not None
    phone = SimPhone(seed=3)
    assert task.is_successful(phone, expected) == 1.0
    assert task.is_successful(phone, good(expected)) == 1.0, good(expected)
    assert task.is_successful(phone, bad(expected)) == 0.0, bad(expected)
    assert task.is_successful(phone, None) == 0.0


def test_a_recording_of_the_wrong_length_or_a_second_one_fails() -> None:
    task = make_task("RecorderRecordMemo", 0)
    phone = SimPhone(seed=0)
    task.setup(phone)
    app = phone.app("com.simphone.recorder")
    assert isinstance(app, RecorderApp)
    app.add_recording("Recording 9", task.params["seconds"] + 10, phone.now)
    assert task.is_successful(phone) == 0.0
    app.state.recordings[-1].seconds = task.params["seconds"] + 1
    assert task.is_successful(phone) == 1.0
    app.add_recording("Recording 10", task.params["seconds"], phone.now)
    assert task.is_successful(phone) == 0.0
