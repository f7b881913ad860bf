"""Hydra composition and overrides (the leaf helpers: harness/core/config_values.py).

The root config lives in `configs/config.yaml` (installed as the package `factrl.configs`).
`hydra_entry` runs a task through `hydra.main`, so `-m` sweeps, `--cfg job` and tab
completion work as in any Hydra app; `compose` gives the same config without Hydra's
runtime (tests, notebooks). Both go through `prepare_overrides`, which lets a user write
`model=org/name` or `model=/local/dir` for any model.
"""
from __future__ import annotations

import re
import sys
from importlib import resources
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from ..core.config_values import SECRET_KEY
from ..core.errors import HarnessError, did_you_mean


CONFIG_MODULE = "factrl.configs"
CONFIG_NAME = "config"


def group_options(group: str) -> list[str]:
    """Names of the YAML options of a config group (e.g. `model`)."""
    folder = resources.files(CONFIG_MODULE).joinpath(group)
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def prepare_overrides(overrides: list[str]) -> list[str]:
    """Rewrite `model=org/name` and `model=/dir` into the `custom` model option."""
    known = set(group_options("model"))
    out = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if sep and key == "model" and value not in known and ("/" in value or value.startswith(".")):
            field = "path" if value.startswith(("/", ".", "~")) else "id"
            out += ["model=custom", f"model.{field}={value}", f"model.name={value.rstrip('/').split('/')[-1]}"]
        else:
            out.append(item)
    return out


GROUPS = ("method", "model", "pool", "eval", "train", "lora", "corpus", "evidence", "judge", "timer", "leaderboard",
          "experiment", "launcher")


def check_group_choices(overrides: list[str]) -> None:
    """Reject `group=option` overrides naming an option that does not exist, with the valid ones.

    Hydra would say so too, but with its search path and a hint about stack traces; this is
    the one-line version. Sweep values (`method=a,b`) are checked one by one.
    """
    from hydra.core.config_store import ConfigStore

    stored = ConfigStore.instance().repo
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.lstrip("+~")
        if not sep or key not in GROUPS:
            continue
        valid = set(group_options(key)) | {n[:-5] for n in stored.get(key, {}) if n.endswith(".yaml")}
        for choice in value.split(","):
            choice = choice.strip()
            if choice and choice not in valid and not choice.startswith(("${", "choice(", "range(", "glob(")):
                raise HarnessError(f"unknown {key} '{choice}'.{did_you_mean(choice, valid)} "
                                   f"Valid: {', '.join(sorted(valid))}.")


def check_no_secrets(overrides: list[str]) -> None:
    """Refuse a secret-looking override (`judge.api_key=...`, `+x.token=...`) without echoing it:
    shell history, process lists and job logs keep command lines, and no setting reads such a
    key (the judge reads its key from the variable `judge.api_key_env` names)."""
    for item in overrides:
        key, sep, value = item.partition("=")
        name = key.lstrip("+~")
        if sep and value and SECRET_KEY.search(name.rsplit(".", 1)[-1]):
            raise HarnessError(f"{name}=...: secrets are not taken on the command line (shell history and process "
                               f"lists keep them); export the key in an environment variable and pass its name, "
                               f"e.g. judge.api_key_env=OPENAI_API_KEY.")


def register_method_configs() -> None:
    """Give every registered method without a configs/method/<name>.yaml its class defaults,
    and one without a configs/protocol/method/<name>.yaml its `protocol_defaults`.

    This is how a plugin method gets `method=<name>` (and its original's training settings)
    without touching configs/.
    """
    from hydra.core.config_store import ConfigStore

    from ..core.registry import all_methods

    shipped = set(group_options("method"))
    protocols = set(group_options("protocol/method"))
    store = ConfigStore.instance()
    for name, entry in all_methods().items():
        protocol = dict(entry.method.protocol_defaults) if entry.method is not None else {}
        if protocol and name not in protocols:
            # The `optional protocol/method: ${method}` default finds it like a shipped file.
            store.store(group="protocol/method", name=name, node=protocol, package="_global_")
        if name in shipped:
            continue
        # A plugin that failed to import still gets a node, so `method=<name>` composes and the
        # run stops at get_method with the plugin's own import error instead of "unknown method".
        defaults = dict(entry.method.config_defaults) if entry.method is not None else {}
        if not defaults and entry.method is not None and entry.method.settings_class is not None:
            defaults = entry.method.settings_class.default_values()  # a plugin's Settings.DEFAULTS
        store.store(group="method", name=name, node={"name": name, **defaults})


def compose(overrides: list[str] | None = None, config_name: str = CONFIG_NAME) -> DictConfig:
    """The composed root config, as `harness run` would see it (without Hydra's runtime)."""
    register_method_configs()
    prepared = prepare_overrides(list(overrides or []))
    check_no_secrets(prepared)
    check_group_choices(prepared)
    return _compose_prepared(prepared, config_name)


def _compose_prepared(prepared: list[str], config_name: str) -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.errors import HydraException

    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            return hydra_compose(config_name=config_name, overrides=prepared)
    except HydraException as err:
        raise HarnessError(_one_line(err, prepared, config_name)) from None


_NOT_IN_STRUCT = re.compile(r"Could not override '([^']+)'.*?full_key: (\S+)", re.DOTALL)


def _one_line(err: Exception, prepared: list[str], config_name: str) -> str:
    """Hydra's composition error as one line. A mistyped key (`train.stepz=2`, `trian.steps=2`)
    becomes `train.stepz: unknown key (did you mean train.steps?); valid: ...`, without Hydra's
    advice to write `+train.stepz=2` (that form adds a key nothing reads; the settings refuse it)."""
    from ..core.settings import unknown_key

    text = "\n".join(str(e).strip() for e in (err, err.__cause__) if e is not None)  # the cause names the key
    found = _NOT_IN_STRUCT.search(text) if "is not in struct" in text else None
    if found:
        override, full_key = found.groups()
        others = [o for o in prepared if o.partition("=")[0].lstrip("+~") != override]
        try:
            cfg = _compose_prepared(others, config_name)
        except HarnessError:
            cfg = None
        parent, _, key = full_key.rpartition(".")
        node = (OmegaConf.select(cfg, parent) if parent else cfg) if cfg is not None else None
        if isinstance(node, DictConfig):
            from ..core.settings import keys_of_options

            # A key of another option of the same group (judge.base_url on judge=reference): say which.
            elsewhere = keys_of_options(parent) if parent in GROUPS and parent != "experiment" else None
            return unknown_key(parent, key, [str(k) for k in node.keys()], elsewhere)
    lines = [line.strip() for line in str(err).strip().splitlines()
             if line.strip() and not line.strip().startswith(("To append to your config", "Set the environment"))]
    return " ".join(lines)


def check_overrides(argv: list[str], config_name: str = CONFIG_NAME) -> None:
    """Compose the first job of `argv` (flags and Hydra's own keys left out; a sweep `a=1,2`
    as `a=1`) so a mistyped key or group option is one HarnessError line before Hydra runs."""
    if any(a in ("-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir") for a in argv):
        return  # another root config: Hydra's own checks
    first = []
    for item in argv:
        key, sep, value = item.partition("=")
        if not sep or item.startswith("-") or key.lstrip("+~").startswith("hydra."):
            continue
        if any(value.startswith(f) for f in ("choice(", "range(", "interval(", "glob(", "sort(", "shuffle(")):
            continue
        if "," in value and not any(c in value for c in "[]{}()'\""):
            value = value.split(",")[0]
        first.append(f"{key}={value}")
    _compose_prepared(first, config_name)


def hydra_entry(task: Callable[[DictConfig], Any], argv: list[str], prog: str,
                config_name: str = CONFIG_NAME) -> int:
    """Run `task(cfg)` under hydra.main with `argv` as the command line."""
    import hydra

    register_method_configs()
    status = {"code": 0}

    def _task(cfg: DictConfig) -> Any:
        try:
            return task(cfg)
        except HarnessError as err:
            # One line, not Hydra's traceback; a sweep continues with its next job.
            print(f"{prog}: error: {err}", file=sys.stderr)
            status["code"] = err.exit_code
            if not _is_multirun(argv):
                raise SystemExit(err.exit_code) from None
            from .sweep_status import record_failure

            record_failure(str(err), err.exit_code)  # for a submitting process that is not this one
            return None

    wrapped = hydra.main(config_path=f"pkg://{CONFIG_MODULE}", config_name=config_name, version_base="1.3")(_task)
    prepared = prepare_overrides(argv)
    check_no_secrets(prepared)
    check_group_choices(prepared)
    check_overrides(prepared, config_name)  # Hydra's many-line errors, as one HarnessError line
    saved = sys.argv
    sys.argv = [prog, *prepared]
    try:
        wrapped()
    finally:
        sys.argv = saved
    if _is_multirun(argv):
        from .sweep_status import failures, last_sweep

        failed = failures(last_sweep())
        for item in failed:
            print(f"{prog}: job {item['job']} failed: {item.get('error')}", file=sys.stderr)
        if failed and not status["code"]:
            status["code"] = max(int(item.get("exit_code") or 1) for item in failed)
    return status["code"]


def _is_multirun(argv: list[str]) -> bool:
    return any(a in ("-m", "--multirun") for a in argv)
