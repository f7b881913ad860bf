"""Build the viewer into a published site: a page per run, a side-by-side page per (model, set).

    OUT/viewer/runs/<run>.html                   the run: provenance marks, curves, rollouts, samples
    OUT/viewer/runs/<run>/index.js               its index shard: steps, sets, filter codes, colour scale
    OUT/viewer/runs/<run>/steps/<step>-<part>.js one optimizer step's groups (whole groups, ~part_size completions)
    OUT/viewer/runs/<run>/samples/<set>/<page>.js  page_size evaluation samples
    OUT/viewer/compare/<model>--<set>.html       every method's answer per question, with filters
    OUT/viewer/compare/<model>--<set>/index.js, /<page>.js
    OUT/viewer/assets/viewer{,-run,-compare}.js, viewer.css  the pages' code and style
    OUT/plots/curves_<run>.png                   the run's training curves (index and run page share it)

Everything but the plots lives under OUT/viewer/, one folder publish owns (a republish removes
what it did not write there), so publishing into a folder that also holds `runs/` of run
directories can never touch them.

Runs are those of the published rows; a run's directory is found through its rows' `source`
(runfiles.locate). Layout `viewer: {enabled, page_size, part_size}` (settings.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from factrl.harness.core.rundir import atomic_write
from factrl.harness.core.settings import Settings
from factrl.harness.core.timer import format_hms

from .. import guards as guardslib
from .. import results
from ..components import row_stand_ins
from ..marks import RECONSTRUCTED, row_fidelity, row_substitutes
from ..render import training_plots
from ..store.versions import model_key
from ..tables import Layout, Table, model_labels
from . import pages, rollouts, runfiles, samples, sentences, shards
from .schema import VIEWER_SCHEMA


RUNS, COMPARE, ASSETS = "viewer/runs", "viewer/compare", "viewer/assets"
UP = "../../"  # from a page under RUNS or COMPARE back to the site's root


@dataclass(frozen=True)
class ViewerSettings(Settings):
    """Layout `viewer:` (configs/leaderboard/layout/paper.yaml)."""
    OWNER = "viewer"
    DEFAULTS = "leaderboard/layout/paper.yaml:viewer"
    RANGES = {"page_size": "[1, inf)", "part_size": "[1, inf)", "max_steps": "[1, inf)"}
    enabled: bool
    page_size: int
    part_size: int
    max_steps: int | None

    def __post_init__(self):
        for key in ("page_size", "part_size", "max_steps"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise ValueError(f"{key}={getattr(self, key)} must be at least 1")


def kept_steps(steps: list[int], most: int | None) -> set[int]:
    """`most` evenly spaced steps of a run, its first and last included (all when None)."""
    ordered = sorted(set(steps))
    if most is None or len(ordered) <= most:
        return set(ordered)
    if most == 1:
        return {ordered[-1]}
    return {ordered[int(i * (len(ordered) - 1) / (most - 1) + 0.5)] for i in range(most)}


@dataclass
class Site:
    """What the index page links to, and every file written."""
    files: list[Path] = field(default_factory=list)
    run_pages: dict[str, str] = field(default_factory=dict)  # run_id -> runs/<key>.html
    compare_pages: list[tuple[str, str, str]] = field(default_factory=list)  # (model, set label, href)
    curves: dict[str, str] = field(default_factory=dict)  # run_id -> plots/curves_<key>.png
    notes: list[str] = field(default_factory=list)

    def samples_href(self, row: dict[str, Any]) -> str | None:
        page = self.run_pages.get(row["run"]["run_id"])
        return f"{page}#set={row['set']['name']}" if page else None


def _keys(run_ids: list[str]) -> dict[str, str]:
    """A file-safe, unique name per run id."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for run_id in run_ids:
        base = results.safe_name(run_id)
        key, n = base, 2
        while key in used:
            key, n = f"{base}-{n}", n + 1
        used.add(key)
        out[run_id] = key
    return out


def _asset(name: str) -> str:
    return resources.files("factrl.leaderboard").joinpath("templates", name).read_text(encoding="utf-8")


def _facts(run_rows: list[dict], shown: dict[str, dict], layout: Layout, labels: dict[str, str]) -> list[tuple[str, str]]:
    first = run_rows[0]
    e = pages._e
    timer = first.get("timer") or {}
    facts = [("method", e(layout.method_label(first["method"]["name"]))),
             ("model", e(labels[model_key(first["model"])])), ("seed", e(first.get("seed"))),
             ("run", f"<code>{e(first['run']['run_id'])}</code>"),
             ("steps", e(first.get("steps") if first.get("steps") is not None else "not trained"))]
    if timer:
        facts.append(("training time", e(format_hms(timer.get("total_s")))))
    for row in run_rows:
        metric = row["metrics"].get("accuracy") or next(iter(row["metrics"].values()))
        facts.append((layout.set_label(row["set"]["name"]),
                      f'{100 * metric["value"]:.2f}% (n={e(metric["n"])}) · '
                      f'<a href="{UP}index.html#row-{e(row["row_id"])}">provenance</a>'))
    source = shown.get(first["row_id"], first).get("source")
    facts.append(("source", f"<code>{e(source)}</code>"))
    return facts


def _movement_box(movement: Any, training: dict | None) -> str:
    e = pages._e
    parts = []
    if movement is not None:
        cls = "flag" if movement.mark else ""
        heading = f"{movement.mark} {movement.label[:1].upper()}{movement.label[1:]}" if movement.mark else "Movement"
        text = movement.text.removeprefix(f"{movement.label}: ")  # the heading says it
        parts.append(f'<section class="box {cls}" id="movement"><b>{e(heading)}:</b> {e(text)}.')
    delta = (training or {}).get("adapter_delta")
    if delta:
        text = (f"adapter: {delta.get('changed')} of {delta.get('tensors')} LoRA tensors changed, relative change "
                f"{float(delta.get('relative_change') or 0):.3g}, largest |change| {float(delta.get('max_abs_change') or 0):.3g}")
        parts.append(f" {e(text)}." if parts else f'<section class="box" id="movement">{e(text)}.')
    return (" ".join(parts) + "</section>\n") if parts else ""


def build(rows: list[dict], shown_rows: list[dict], accuracy: Table | None, layout: Layout, out: Path,
          probe_results: list[Any] | None = None, settings: ViewerSettings | None = None) -> Site:
    """Write the viewer of every published run (module docstring); returns what the index links."""
    settings = settings or ViewerSettings.from_mapping(layout.settings.get("viewer"))
    site = Site()
    if not settings.enabled or not rows:
        return site
    page_size, part_size = settings.page_size, settings.part_size
    for name in ("viewer.js", "viewer-run.js", "viewer-compare.js", "viewer.css"):
        site.files.append(atomic_write(out / ASSETS / name, _asset(name)))
    by_run: dict[str, list[dict]] = {}
    for row in rows:
        by_run.setdefault(row["run"]["run_id"], []).append(row)
    keys = _keys(sorted(by_run))
    shown = {r["row_id"]: r for r in shown_rows}
    labels = model_labels(rows)
    movement = {}
    for line in (accuracy.lines if accuracy else []):
        for run_id in line.run_ids:
            movement.setdefault(run_id, line.movement)
    probe = samples.probe_verdicts(probe_results or [])
    items: dict[tuple[str, str], list[dict]] = {}  # (run_id, set) -> viewer items, for the side-by-side pages
    for run_id, run_rows in sorted(by_run.items()):
        order = layout.sort_sets(r["set"]["name"] for r in run_rows)  # the tables' set order
        run_rows.sort(key=lambda r: order.index(r["set"]["name"]))
        key = keys[run_id]
        site.run_pages[run_id] = f"{RUNS}/{key}.html"
        trained = any(r.get("steps") is not None for r in run_rows)
        files = runfiles.read(runfiles.locate(run_rows[0]), [r["set"]["name"] for r in run_rows], trained)
        index: dict[str, Any] = {"schema": VIEWER_SCHEMA, "run_id": run_id, "steps": [], "sets": [],
                                 "step_path": f"{RUNS}/{key}/steps/{{step}}-{{part}}.js",
                                 "sample_path": f"{RUNS}/{key}/samples/{{set}}/{{page}}.js", "scale": 1.0}
        missing = list(files.missing)
        if trained and (files.rollouts is not None or files.records):
            joined, attached, notes = rollouts.join(files.rollouts, files.records)
            missing += notes
            keep = kept_steps([r["step"] for r in joined if isinstance(r.get("step"), int)], settings.max_steps)
            if settings.max_steps is not None and len(keep) < len({r.get("step") for r in joined}):
                missing.append(f"rollouts of {len(keep)} evenly spaced steps shown (layout viewer.max_steps="
                               f"{settings.max_steps}); the curves cover every step")
            values: list[float] = []
            parts: dict[int, dict[str, Any]] = {}
            for step, part, shard in rollouts.steps(joined, attached, files.group_size, part_size, keep):
                site.files.append(shards.write(out, f"{RUNS}/{key}/steps/{step}-{part}.js", shard))
                values += rollouts.sentence_values(shard)
                summary = rollouts.summary(shard)
                if step not in parts:
                    parts[step] = {**summary, "parts": 0, "groups": 0, "completions": 0, "_rewards": []}
                entry = parts[step]
                entry["parts"] += 1
                entry["groups"] += summary["groups"]
                entry["completions"] += summary["completions"]
                entry["_rewards"] += [c.get("reward") for g in shard["groups"] for c in g["completions"]
                                      if isinstance(c.get("reward"), (int, float))]
            for entry in parts.values():
                found = entry.pop("_rewards")
                entry["reward"] = sum(found) / len(found) if found else None
                entry.pop("part", None)
            index["steps"] = [parts[s] for s in sorted(parts)]
            index["scale"] = sentences.scale(values)
        for row in run_rows:
            name = row["set"]["name"]
            found = files.samples.get(name)
            if found is None:
                continue
            top = samples.top_answer(row)
            paid = probe.get(guardslib.table_view(row)["method"]["name"], {})  # its own probe column
            entries = [samples.item(s, i, row["set"]["task"], top, paid) for i, s in enumerate(found)]
            items[(run_id, name)] = entries
            for page in range(0, len(entries), page_size):
                site.files.append(shards.write(out, f"{RUNS}/{key}/samples/{name}/{page // page_size}.js",
                                               {"set": name, "page": page // page_size,
                                                "items": entries[page:page + page_size]}))
            index["sets"].append({"name": name, "label": layout.set_label(name), "n": len(entries),
                                  "page_size": page_size, "codes": "".join(samples.code(e) for e in entries)})
        site.files.append(shards.write(out, f"{RUNS}/{key}/index.js", index))
        training = next((r.get("training") for r in run_rows if r.get("training")), None)
        curves = None
        if trained:
            title = f"{layout.method_label(run_rows[0]['method']['name'])} · {labels[model_key(run_rows[0]['model'])]}"
            drawn = training_plots.run_curves(training, title, out / "plots" / f"curves_{key}.png")
            if isinstance(drawn, Path):
                site.files.append(drawn)
                curves = site.curves[run_id] = f"plots/curves_{key}.png"
        first = run_rows[0]
        substitutes = sorted({t for r in run_rows for t in row_substitutes(r)})
        marks = pages.marks_box(sorted({s for r in run_rows for s in row_stand_ins(r)}),
                                any(row_fidelity(r) == RECONSTRUCTED for r in run_rows), substitutes)
        title = (f"{layout.method_label(first['method']['name'])} on {labels[model_key(first['model'])]}, "
                 f"seed {first.get('seed')}")
        html = pages.run_page(title=title, root=UP, index_key=f"{RUNS}/{key}/index.js",
                              facts=_facts(run_rows, shown, layout, labels), marks=marks,
                              movement=_movement_box(movement.get(run_id), training),
                              curves=f"{UP}{curves}" if curves else None,
                              curves_note="no training curves stored for this run (train/log.jsonl absent, or a row "
                                          "recorded before rows kept them)",
                              missing=missing, trained=trained, links=[(f"{UP}index.html", "← leaderboard")])
        site.files.append(atomic_write(out / RUNS / f"{key}.html", html))
    _compare(site, accuracy, rows, items, layout, out, page_size)
    return site


def _compare(site: Site, accuracy: Table | None, rows: list[dict], items: dict[tuple[str, str], list[dict]],
             layout: Layout, out: Path, page_size: int) -> None:
    """Side-by-side pages: per model group of the accuracy table and set, its lines' runs."""
    if accuracy is None:
        return
    by_id = {r["row_id"]: r for r in rows}
    for group, lines in accuracy.groups:
        for column in accuracy.columns:
            if column.key == "macro":
                continue
            chosen = []
            for line in lines:
                cell = line.cells.get(column.key)
                row = by_id.get(cell.row_ids[0]) if cell and cell.row_ids else None
                if row is not None and (row["run"]["run_id"], column.key) in items:
                    chosen.append((line, row))
            if len(chosen) < 2:
                continue
            name = results.safe_name(f"{group}--{column.key}")
            questions, codes = samples.side_by_side([(line.method, items[(row["run"]["run_id"], column.key)])
                                                     for line, row in chosen])
            methods = [{"method": line.method, "label": line.method_label,
                        "href": f"{UP}{site.run_pages[row['run']['run_id']]}"} for line, row in chosen]
            index = {"schema": VIEWER_SCHEMA, "model": group, "set": column.key, "methods": methods,
                     "n": len(questions), "page_size": page_size, "codes": codes,
                     "page_path": f"{COMPARE}/{name}/{{page}}.js"}
            for start in range(0, len(questions), page_size):
                site.files.append(shards.write(out, f"{COMPARE}/{name}/{start // page_size}.js",
                                               {"page": start // page_size, "items": questions[start:start + page_size]}))
            site.files.append(shards.write(out, f"{COMPARE}/{name}/index.js", index))
            label = column.label.rstrip("†")
            raw = layout.method_label(layout.raw)
            html = pages.compare_page(
                title=f"{label} on {group}: every method's answer per question", root=UP,
                index_key=f"{COMPARE}/{name}/index.js", methods=[(m["label"], m["href"]) for m in methods],
                note=f"One run per method (the accuracy table's line; a multi-seed line's best seed). The first "
                     f"column is {raw}; a cell is green where the method turned {raw}'s wrong answer right, red where "
                     "it turned a right one wrong.",
                links=[(f"{UP}index.html", "← leaderboard")])
            site.files.append(atomic_write(out / COMPARE / f"{name}.html", html))
            site.compare_pages.append((group, label, f"{COMPARE}/{name}.html"))
