"""Device backends: SimPhone (built in), Android over adb, X11 desktops. See :mod:`agent_runtime.device`."""

from agent_runtime.devices.registry import BACKENDS, resolve_device, split_spec

__all__ = ["BACKENDS", "resolve_device", "split_spec"]
