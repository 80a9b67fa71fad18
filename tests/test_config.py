"""Configuration: file discovery, env overrides, one message per problem with key paths."""

import pytest

from agent_runtime.config import EXAMPLE_CONFIG, RuntimeConfig, load_config
from agent_runtime.coords import CoordSpace
from agent_runtime.errors import ConfigError


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for key in list(__import__("os").environ):
        if key.startswith("AGENT_RUNTIME_"):
            monkeypatch.delenv(key)


def write(tmp_path, text, name="agent-runtime.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_defaults_without_a_file():
    cfg = load_config()
    assert cfg.device.spec == "simphone" and cfg.graph.max_steps == 25
    assert cfg.model_for("worker").base_url == "http://127.0.0.1:8000/v1"


def test_example_config_is_valid_and_found_in_cwd(tmp_path):
    write(tmp_path, EXAMPLE_CONFIG.replace("max_steps = 25", "max_steps = 9"))
    assert load_config().graph.max_steps == 9


def test_user_config_is_the_fallback(tmp_path):
    user = tmp_path / "home/.config/agent-runtime/config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[graph]\nmax_steps = 11\n")
    assert load_config().graph.max_steps == 11


def test_every_problem_is_reported_with_its_key_path(tmp_path):
    path = write(
        tmp_path,
        """
[models.local]
base_url = "http://x/v1"
coords = "furlongs"
temperature = 9
[roles.worker]
model = "local"
colour = "red"
[graph]
max_steps = "many"
[nonsense]
a = 1
""",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    for expected in (
        "models.local.coords",
        "models.local.temperature",
        "roles.worker.colour: unknown key",
        "graph.max_steps",
        "nonsense: unknown key",
        "5 problems",
    ):
        assert expected in text, text


def test_unknown_model_reference(tmp_path):
    path = write(tmp_path, '[roles.manager]\nmodel = "nope"\n')
    with pytest.raises(ConfigError, match="unknown model 'nope'"):
        load_config(path)


def test_invalid_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[graph\n"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")


def test_env_overrides_file(tmp_path, monkeypatch):
    path = write(
        tmp_path, '[graph]\nmax_steps = 5\n[models.default]\nbase_url = "http://a/v1"\nmodel = "m"\n'
    )
    monkeypatch.setenv("AGENT_RUNTIME_GRAPH__MAX_STEPS", "7")
    monkeypatch.setenv("AGENT_RUNTIME_MODELS__DEFAULT__BASE_URL", "http://b/v1")
    cfg = load_config(path)
    assert cfg.graph.max_steps == 7
    assert cfg.models["default"].base_url == "http://b/v1" and cfg.models["default"].model == "m"


def test_bad_env_value_is_a_config_error(monkeypatch):
    monkeypatch.setenv("AGENT_RUNTIME_GRAPH__MAX_STEPS", "lots")
    with pytest.raises(ConfigError, match="graph.max_steps"):
        load_config()


def test_role_binding_named_inline_and_overrides(tmp_path):
    path = write(
        tmp_path,
        """
[models.big]
base_url = "http://big/v1"
model = "gui-owl-32b"
coords = "relative_1000"
[roles.manager]
model = "big"
temperature = 0.7
[roles.reflector]
base_url = "http://small/v1"
model = "qwen-7b"
""",
    )
    cfg = load_config(path)
    manager = cfg.model_for("manager")
    assert (manager.base_url, manager.model, manager.coords, manager.temperature) == (
        "http://big/v1",
        "gui-owl-32b",
        CoordSpace.RELATIVE_1000,
        0.7,
    )
    assert cfg.model_for("reflector").model == "qwen-7b"
    assert cfg.model_for("worker").base_url == "http://big/v1"  # the only model is the default


def test_public_snapshot_has_no_secrets():
    cfg = RuntimeConfig(models={"default": {"api_key": "sk-secret"}}, roles={"worker": {"api_key": "sk-2"}})
    assert "sk-" not in str(cfg.public())


def test_cli_overrides_via_dotted_keys():
    assert load_config(**{"graph.max_steps": 3, "device.spec": "adb:xyz"}).device.spec == "adb:xyz"


def test_a_mistyped_key_gets_a_did_you_mean(tmp_path):
    write(
        tmp_path,
        '[graph]\nmax_step = 5\n[models.owl]\nbase_ur = "http://x/v1"\n[roles.worker]\nmodle = "owl"\n',
    )
    with pytest.raises(ConfigError) as raised:
        load_config()
    message = raised.value.message
    assert "graph.max_step: unknown key (did you mean max_steps?)" in message
    assert "models.owl.base_ur: unknown key (did you mean base_url?)" in message
    assert "roles.worker.modle: unknown key (did you mean model?)" in message


def test_a_mistyped_environment_key_gets_a_did_you_mean(monkeypatch):
    monkeypatch.setenv("AGENT_RUNTIME_GRAPH__MAX_STEP", "5")
    with pytest.raises(ConfigError, match=r"graph\.max_step: unknown key \(did you mean max_steps\?\)"):
        load_config()
    monkeypatch.delenv("AGENT_RUNTIME_GRAPH__MAX_STEP")
    monkeypatch.setenv("AGENT_RUNTIME_GRAF__MAX_STEPS", "5")
    with pytest.raises(ConfigError, match=r"did you mean graph\?"):
        load_config()


def test_a_model_without_base_url_fails_fast_naming_the_default(tmp_path):
    import socket
    import time

    from agent_runtime.errors import ModelError
    from agent_runtime.models import OpenAIChatModel

    with socket.socket() as probe:  # a port nothing listens on, standing in for the default's
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write(tmp_path, '[models.default]\nmodel = "gui-owl"\n')
    cfg = load_config().model_for("worker")
    model = OpenAIChatModel.from_config(cfg).model_copy(update={"base_url": f"http://127.0.0.1:{port}/v1"})
    started = time.monotonic()
    with pytest.raises(ModelError) as raised:
        model._send("GET", "/models")
    assert time.monotonic() - started < 2  # not retried with backoff
    assert "the default base_url (no base_url is set for this model)" in raised.value.message
    assert "set base_url" in (raised.value.hint or "")
    explicit = OpenAIChatModel.from_config(cfg.model_copy(update={"base_url": cfg.base_url}))
    assert not explicit.default_url
