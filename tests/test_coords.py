"""Coordinate spaces: smart_resize matches Qwen, conversions round-trip within one pixel."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_runtime.coords import CoordMapper, CoordSpace, ImageBudget, Size, smart_resize


@pytest.mark.parametrize(
    ("size", "expected"),
    [((1080, 2400), (1092, 2408)), ((1920, 1080), (1932, 1092)), ((28, 28), (56, 56))],
)
def test_smart_resize_known_sizes(size, expected):
    assert ImageBudget().resized(Size(*size)) == Size(*expected)


def test_smart_resize_respects_max_pixels():
    h, w = smart_resize(4000, 3000, max_pixels=1_000_000)
    assert h * w <= 1_000_000 and h % 28 == 0 and w % 28 == 0
    assert abs(h / w - 4 / 3) < 0.05


def test_smart_resize_rejects_extreme_aspect_ratio():
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(10, 5000)


sizes = st.builds(Size, st.integers(200, 4000), st.integers(200, 4000)).filter(
    lambda s: max(s) / min(s) < 200
)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes, st.sampled_from(list(CoordSpace)), st.data())
def test_round_trip_within_one_pixel(screen, space, data):
    mapper = CoordMapper(space=space, screen=screen)
    x = data.draw(st.integers(0, screen.width - 1))
    y = data.draw(st.integers(0, screen.height - 1))
    mx, my = mapper.from_screen(x, y)
    sx, sy = mapper.to_screen(mx, my)
    assert abs(sx - x) <= 1 and abs(sy - y) <= 1


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes, st.sampled_from(list(CoordSpace)), st.floats(-1e6, 1e6), st.floats(-1e6, 1e6))
def test_to_screen_is_clamped_on_screen(screen, space, x, y):
    sx, sy = CoordMapper(space=space, screen=screen).to_screen(x, y)
    assert 0 <= sx < screen.width and 0 <= sy < screen.height


def test_spaces_map_the_same_point():
    screen = Size(1080, 2400)
    centre = {
        CoordSpace.PIXELS: (540, 1200),
        CoordSpace.PIXELS_RESIZED: (546, 1204),
        CoordSpace.RELATIVE_1000: (500, 500),
        CoordSpace.NORMALIZED: (0.5, 0.5),
    }
    for space, point in centre.items():
        assert CoordMapper(space=space, screen=screen).to_screen(*point) == (540, 1200)


def test_resized_pixels_are_scaled_not_copied():
    # The reference forgets this on phones (~1 % off): 1092 resized px == 1080 screen px.
    mapper = CoordMapper(space=CoordSpace.PIXELS_RESIZED, screen=Size(1080, 2400))
    assert mapper.to_screen(1000, 2000) == (989, 1993)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_to_screen_refuses_non_finite_points_with_a_message(bad):
    mapper = CoordMapper(space=CoordSpace.PIXELS, screen=Size(1080, 2400))
    with pytest.raises(ValueError, match="non-finite"):
        mapper.to_screen(bad, 5)
