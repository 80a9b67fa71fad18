"""Helpers for tests and CPU demos: :mod:`.tiny_vlm` builds an offline tiny Qwen2.5-VL."""
