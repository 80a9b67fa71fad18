"""UI-stability waiting (agent_runtime/devices/settle.py, shared by the Android and desktop drivers).

A virtual clock makes the timing exact: ``sleep`` advances it, each probe costs ``probe_cost``.
"""

from __future__ import annotations

from collections.abc import Iterator

from agent_runtime.devices.settle import SettleOptions, wait_until_stable


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def probe_from(values: list[str], clock: VirtualClock, probe_cost: float = 0.0) -> tuple[list[int], object]:
    calls: list[int] = []
    it: Iterator[str] = iter(values)
    last = [values[-1]]

    def probe() -> str:
        calls.append(1)
        clock.now += probe_cost
        try:
            last[0] = next(it)
        except StopIteration:
            pass
        return last[0]

    return calls, probe


def test_stable_after_two_equal_probes() -> None:
    clock = VirtualClock()
    calls, probe = probe_from(["a", "b", "c", "c"], clock)
    opts = SettleOptions(timeout_s=5, poll_s=0.1, min_delay_s=0.05)
    result = wait_until_stable(probe, opts, clock=clock.time, sleep=clock.sleep)
    assert result.stable and result.polls == 4 == len(calls)
    assert abs(result.waited_s - (0.05 + 3 * 0.1)) < 1e-9


def test_ever_changing_screen_times_out_within_the_bound() -> None:
    clock = VirtualClock()
    values = [str(i) for i in range(1000)]
    _, probe = probe_from(values, clock, probe_cost=0.03)
    opts = SettleOptions(timeout_s=1.0, poll_s=0.2, min_delay_s=0.0)
    result = wait_until_stable(probe, opts, clock=clock.time, sleep=clock.sleep)
    assert not result.stable
    assert 1.0 <= result.waited_s <= 1.0 + 0.03 + 1e-9


def test_required_streak_and_zero_timeout() -> None:
    clock = VirtualClock()
    calls, probe = probe_from(["a", "a", "b", "b", "b"], clock)
    opts = SettleOptions(timeout_s=5, poll_s=0.1, min_delay_s=0, required=3)
    assert wait_until_stable(probe, opts, clock=clock.time, sleep=clock.sleep).polls == 5
    calls, probe = probe_from(["a"], clock)
    off = wait_until_stable(probe, SettleOptions(timeout_s=0), clock=clock.time, sleep=clock.sleep)
    assert (off.stable, off.polls, calls) == (False, 0, [])


def test_screens_differing_by_a_caret_count_as_the_same() -> None:
    from PIL import Image, ImageDraw

    from agent_runtime.devices.settle import nearly_same, thumbnail

    base = Image.new("RGB", (1080, 2400), "white")
    caret, typed, dialog = base.copy(), base.copy(), base.copy()
    ImageDraw.Draw(caret).rectangle([500, 1000, 503, 1060], fill="black")  # a blinking caret
    ImageDraw.Draw(typed).rectangle([500, 1000, 540, 1060], fill="black")  # one typed character
    ImageDraw.Draw(dialog).rectangle([90, 800, 990, 1500], fill="#444444")  # a dialog opened
    assert nearly_same(thumbnail(base), thumbnail(caret))
    assert not nearly_same(thumbnail(base), thumbnail(typed))
    assert not nearly_same(thumbnail(base), thumbnail(dialog))
    assert not nearly_same(thumbnail(base), thumbnail(base.rotate(90, expand=True)))


def test_custom_sameness_drives_the_streak() -> None:
    clock = VirtualClock()
    _, probe = probe_from(["10", "11", "30", "31"], clock)
    opts = SettleOptions(timeout_s=5, poll_s=0.1, min_delay_s=0)
    close = lambda a, b: abs(int(a) - int(b)) <= 1  # noqa: E731
    assert wait_until_stable(probe, opts, same=close, clock=clock.time, sleep=clock.sleep).polls == 2
