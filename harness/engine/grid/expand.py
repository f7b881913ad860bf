"""`harness grid NAME [overrides]`: expand a comparison grid into `harness run` jobs and launch
the ones that are not done yet.

    harness grid paper --dry-run                      # every cell, done / todo, and the sweeps
    harness grid paper --launcher slurm hydra.launcher.partition=gpu output_dir=/scratch/runs
    harness grid tiny --launcher local                # the test grid, through submitit_local
    harness grid demo                                 # every method on the embedded model, then published

A grid (`configs/grid/<name>.yaml`, or a path to such a file) lists blocks of methods x models
x seeds (x experiments); every cell is one `harness run`. A block marked `optional: true` runs
only when `--block` names it (`--block` names every block to run, so `--block demo --block
beyond-paper` runs both). A cell is done when its finished run
directory exists: the cell's config is composed exactly as `harness run` composes it and looked
up with the same function (`rundir.find_run`, config hash included), so the grid and the run
agree on what "the same run" is. The todo cells are grouped into Cartesian sweeps
(`harness run -m method=M model=a,b seed=42,43 ...`) that cover exactly them, each launched
through Hydra multirun with the chosen `hydra/launcher` (basic = one after another here;
local / slurm = submitit, the `cluster` extra). Jobs record with `leaderboard=rundir` (only
their run directory; cluster-safe) unless a `leaderboard=` override says otherwise; the
summary prints the `harness leaderboard rebuild` command that builds the store.

A cell that another live process holds (its claim file, harness/engine/run/claims.py: a job still pending
in the queue or running) is skipped, unless `--relaunch`; the grid claims every cell it submits
("pending") and its jobs take those claims over, so a second `harness grid` while the first one's
jobs wait or run launches nothing twice. `--eval-jobs` runs each sweep as a training sweep
(`stage=train`) followed by an evaluation sweep (`stage=eval`, with `--eval-timeout-min`), so
training and evaluation each get a job and a time limit of their own (docs/CLUSTER.md).

After the cells, every trained method must have received a signal: a share of no-signal
completions above `signal.max_no_signal_share` (configs/grid/_defaults.yaml; `--max-no-signal`)
fails the grid with one line per method (grid/checks.py); a grid file's `publish:` then rebuilds
its store, runs the probe and publishes both (grid/publish.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ...core.errors import ConfigError

LAUNCHERS = ("basic", "local", "slurm")
GRID_KEYS = {"name", "description", "overrides", "blocks", "signal", "publish"}
BLOCK_KEYS = {"name", "methods", "models", "seeds", "experiments", "overrides", "note", "optional"}


@dataclass
class Cell:
    """One `harness run`: its overrides and, once looked up, its run directory and status."""

    block: str
    method: str
    model: str
    seed: int
    experiment: str | None
    fixed: tuple[str, ...]  # grid + block + command-line overrides (hydra.* excluded)
    run_dir: Path | None = None
    status: str = "todo"  # done | todo | resume | claimed
    claim_path: Path | None = None
    holder: dict | None = None  # the live claim of another process (status claimed)

    @property
    def overrides(self) -> list[str]:
        out = [*self.fixed, f"method={self.method}", f"model={self.model}", f"seed={self.seed}"]
        return out + ([f"experiment={self.experiment}"] if self.experiment else [])

    @property
    def label(self) -> str:
        return f"{self.method} {self.model} seed={self.seed}" + (f" {self.experiment}" if self.experiment else "")


@dataclass
class Grid:
    name: str
    source: str
    cells: list[Cell] = field(default_factory=list)
    max_no_signal_share: float | None = None  # signal.max_no_signal_share over configs/grid/_defaults.yaml (load_grid)
    publish: dict | None = None       # publish: (grid/publish.py), None: nothing published
    left_out: list[str] = field(default_factory=list)  # optional blocks not named with --block (not run)


def _root_seed() -> int:
    """A block without `seeds:` trains at the root's seed (configs/config.yaml)."""
    from ...core.settings import defaults_from_yaml

    return int(defaults_from_yaml("config.yaml")["seed"])


def _share(value: Any, where: str) -> float:
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = -1.0
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"{where}={value}: give a share of completions between 0 and 1, e.g. 0.5.")
    return share


PUBLISH_KEYS = {"out", "store", "probe"}
PROBE_KEYS = {"methods", "questions"}


def check_settings(value: Any, source: str) -> dict | None:
    """The grid file's `publish:` mapping, checked (None: nothing to publish)."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - PUBLISH_KEYS:
        raise ConfigError(f"{source}: publish must be a mapping with keys {', '.join(sorted(PUBLISH_KEYS))}, "
                          "e.g. {out: site, store: leaderboard.sqlite}.")
    from ...core.settings import defaults_from_yaml

    defaults = defaults_from_yaml("grid/_defaults.yaml:publish_options")
    probe = value.get("probe")
    if probe is not None:
        methods = probe.get("methods") if isinstance(probe, dict) else None
        questions = probe.get("questions", defaults["probe_questions"]) if isinstance(probe, dict) else None
        if (not isinstance(probe, dict) or set(probe) - PROBE_KEYS or not isinstance(methods, list) or not methods
                or not isinstance(questions, int) or questions < 1):
            raise ConfigError(f"{source}: publish.probe must be {{methods: [corver, ...], questions: N >= 1}}.")
        probe = {**probe, "questions": questions}
    return {"out": str(value.get("out") or defaults["out"]), "store": str(value.get("store") or defaults["store"]),
            "probe": probe}


def _grid_settings(data: dict, source: str) -> tuple[float, dict | None]:
    """signal.max_no_signal_share and publish of a grid file over configs/grid/_defaults.yaml."""
    from ...core.settings import defaults_from_yaml

    defaults = defaults_from_yaml("grid/_defaults.yaml")
    signal = data.get("signal") or {}
    if not isinstance(signal, dict) or set(signal) - {"max_no_signal_share"}:
        raise ConfigError(f"{source}: signal must be a mapping {{max_no_signal_share: 0.5}}.")
    share = signal.get("max_no_signal_share", defaults["signal"]["max_no_signal_share"])
    return (_share(share, f"{source}: signal.max_no_signal_share"),
            check_settings(data.get("publish", defaults["publish"]), source))


def _grid_file(name: str) -> tuple[str, str]:
    """(YAML text, where it came from) of a shipped grid name or a file path."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except OSError as err:
            raise ConfigError(f"grid file {path}: cannot read it ({err}).") from None
        except UnicodeDecodeError as err:
            raise ConfigError(f"grid file {path}: not UTF-8 text (byte {err.start}).") from None
    folder = resources.files("factrl.configs").joinpath("grid")
    shipped = sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml") and not p.name.startswith("_"))
    if name not in shipped:
        raise ConfigError(f"unknown grid '{name}'; shipped: {', '.join(shipped)} (configs/grid/), or pass a YAML path.")
    return folder.joinpath(f"{name}.yaml").read_text(encoding="utf-8"), f"configs/grid/{name}.yaml"


def _strings(value: Any, where: str, *, required: bool = True) -> list[str]:
    if value in (None, []) and not required:
        return []
    if not isinstance(value, list) or not value or not all(isinstance(v, (str, int)) for v in value):
        raise ConfigError(f"{where}: must be a non-empty list of names, e.g. [raw, corver].")
    return [str(v) for v in value]


def load_grid(name: str, extra: list[str], seeds: list[int] | None = None,
              blocks: list[str] | None = None) -> Grid:
    """The grid's cells; `extra` overrides apply to every cell, `seeds` replaces each block's."""
    text, source = _grid_file(name)
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: invalid YAML ({' '.join(str(err).split())}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("blocks"), list) or not data["blocks"]:
        raise ConfigError(f"{source}: needs `blocks:`, a list of {{name, methods, models, seeds}} mappings.")
    unknown = set(data) - GRID_KEYS
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(sorted(unknown))}; valid: {', '.join(sorted(GRID_KEYS))}.")
    common = _strings(data.get("overrides"), f"{source}: overrides", required=False)
    grid = Grid(str(data.get("name") or Path(source).stem), source)
    grid.max_no_signal_share, grid.publish = _grid_settings(data, source)
    names = []
    for i, block in enumerate(data["blocks"]):
        where = f"{source}: blocks[{i}]"
        if not isinstance(block, dict):
            raise ConfigError(f"{where}: must be a mapping with name, methods, models, seeds.")
        bad = set(block) - BLOCK_KEYS
        if bad:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(bad))}; valid: {', '.join(sorted(BLOCK_KEYS))}.")
        label = str(block.get("name") or f"block{i}")
        names.append(label)
        optional = block.get("optional")  # absent: the block always runs
        if optional not in (None, True, False):
            raise ConfigError(f"{where}.optional: must be true or false (true: run only when named with --block).")
        if blocks and label not in blocks:
            continue
        if not blocks and optional:
            grid.left_out.append(label)  # an optional block runs only when --block names it
            continue
        try:
            block_seeds = seeds or [int(s) for s in _strings(block.get("seeds", [_root_seed()]), f"{where}.seeds")]
        except ValueError:
            raise ConfigError(f"{where}.seeds: must be integers, e.g. [42, 43, 44].") from None
        fixed = tuple(common + _strings(block.get("overrides"), f"{where}.overrides", required=False) + extra)
        experiments: list[str | None] = list(_strings(block.get("experiments"), f"{where}.experiments",
                                                      required=False)) or [None]
        for experiment in experiments:
            for method in _strings(block.get("methods"), f"{where}.methods"):
                for model in _strings(block.get("models"), f"{where}.models"):
                    grid.cells += [Cell(label, method, model, seed, experiment, fixed) for seed in block_seeds]
    missing = sorted(set(blocks or []) - set(names))
    if missing:
        raise ConfigError(f"--block {', '.join(missing)}: not in {source}; its blocks: {', '.join(names)}.")
    if not grid.cells:
        raise ConfigError(f"{source}: every block is optional; name the ones to run with --block "
                          f"({', '.join(names)}).")
    return grid


def look_up(grid: Grid, token: str | None = None) -> None:
    """Set each cell's run directory and status (done | resume | todo, or claimed: not finished
    and held by a live process other than `token`'s) as `harness run` would find it."""
    from ..run.claims import claim_path, holder
    from ..config import compose
    from ...core.rundir import find_run
    from ..run.settings import ClaimSettings

    for cell in grid.cells:
        cfg = compose(cell.overrides)
        run = find_run(cfg)
        cell.run_dir = run.path if run else None
        cell.status = "todo" if run is None else ("done" if run.finished else "resume")
        cell.claim_path = claim_path(cfg)
        cell.holder = None
        if cell.status != "done":
            cell.holder = holder(cell.claim_path, ClaimSettings.from_mapping(cfg.get("claim")).stale_s, token)
            if cell.holder is not None:
                cell.status = "claimed"


def sweeps(cells: list[Cell]) -> list[list[str]]:
    """`harness run -m` override lists whose Cartesian products are exactly `cells`.

    Cells sharing everything but model and seed form a group; in it, models with the same
    set of seeds sweep together (`model=a,b seed=42,43`); sweeps that then differ only in
    their (named) experiment merge into one (`experiment=corver-a1,corver-a2`)."""
    groups: dict[tuple, dict[str, list[int]]] = {}
    for cell in cells:
        key = (cell.fixed, cell.method, cell.experiment)
        groups.setdefault(key, {}).setdefault(cell.model, []).append(cell.seed)
    merged: dict[tuple[tuple[str, ...], bool], list] = {}
    for (fixed, method, experiment), models in groups.items():
        by_seeds: dict[tuple[int, ...], list[str]] = {}
        for model, model_seeds in models.items():
            by_seeds.setdefault(tuple(sorted(set(model_seeds))), []).append(model)
        for seed_list, model_list in by_seeds.items():
            # `model=org/name` expands into three overrides (config.prepare_overrides): never swept.
            packs = [model_list] if not any("/" in m for m in model_list) else [[m] for m in model_list]
            for pack in packs:
                line = (*fixed, f"method={method}", f"model={','.join(pack)}", f"seed={','.join(map(str, seed_list))}")
                merged.setdefault((line, experiment is None), []).append(experiment)
    return [list(line) + ([f"experiment={','.join(experiments)}"] if not plain else [])
            for (line, plain), experiments in merged.items()]


def _check_launcher(launcher: str) -> None:
    if launcher == "basic":
        return
    try:
        import hydra_plugins.hydra_submitit_launcher  # noqa: F401
    except ImportError:
        raise ConfigError(f"--launcher {launcher} needs hydra-submitit-launcher: pip install -e \".[cluster]\"; "
                          "or use --launcher basic (one job after another on this machine).") from None


def _describe_holder(cell: Cell) -> str:
    from ..run.claims import describe

    return describe(cell.claim_path, cell.holder or {}) if cell.claim_path is not None else "?"


def _output_dir(extra: list[str]) -> str:
    return next((o.split("=", 1)[1] for o in reversed(extra) if o.startswith("output_dir=")), "runs")
