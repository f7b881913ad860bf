"""`harness leaderboard publish`: every output of one leaderboard version into one folder.

    OUT/leaderboard.md       the tables in Markdown, with notes
    OUT/<table>.csv          each table's values (unrounded, no marks)
    OUT/rows.csv             every stored row and metric with its provenance (long format)
    OUT/tables.tex           the tables in LaTeX (booktabs)
    OUT/index.html           sortable tables, plots, provenance sections
    OUT/reported.html        measured lines beside the papers' reported numbers (tables/reported.py)
    OUT/rows/<row_id>.json   the full record of each row (linked from the page)
    OUT/viewer/              the run viewer: a page per run (training rollouts step by step, evaluation
                             samples) and per (model, set) side by side, with their data shards (viewer/)
    OUT/plots/*.png          accuracy vs training time, gain over Raw, popularity quartiles
    OUT/results/<run>.json   results per run in the lm-evaluation-harness-like format
    OUT/reported.json        reported numbers (reported.py) against the measured ones, per entry
    OUT/manifest.json        what was published, from which store, and the version's pins

Only rows of the requested version are read: rows of two versions never share a table.
The manifest lists every file written; a republish removes what the previous one wrote and
this one did not (rows/ and results/ of removed rows, plots and tables without data), so the
folder never serves a stale row.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from factrl.harness import __version__
from factrl.harness.core.errors import HarnessError
from factrl.harness.core.rundir import atomic_write, git_commit, write_json

from . import components as componentlib
from . import guards as guardslib
from . import reported as reportedlib
from . import results, settings
from .render import formats, htmlpage, plots
from .render.portable import portable
from .store import Store, strip_private, versions
from .store.versions import model_key
from .tables import Layout, Table, model_labels, uncertainty
from .tables import reported as reported_table
from .tables.build import build_tables
from .tables import movement
from .tables.behaviour import behaviour_tables
from .tables.ci import views
from .tables.stats import mde_describe
from .render import training_plots
from .viewer import build as viewerlib


def _write(path: Path, text: str) -> Path:
    """Atomic text write, mode 0644 as every published file: a web server never sees half a page."""
    return atomic_write(path, text)


def _generated(stamp: bool = True) -> str | None:
    """When this publish ran, or None: the time is written only when asked for (`--stamp`, or
    SOURCE_DATE_EPOCH, the reproducible-builds convention, which also fixes its value), so
    publishing the same rows twice gives byte-identical files."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not stamp and not epoch:
        return None
    if epoch:
        try:
            return dt.datetime.fromtimestamp(int(epoch), dt.timezone.utc).isoformat(timespec="seconds")
        except (ValueError, OverflowError, OSError):
            raise HarnessError(f"SOURCE_DATE_EPOCH={epoch!r}: must be whole seconds since 1970 (e.g. "
                               "$(git log -1 --format=%ct)), or unset it.") from None
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _row_labels(rows: list[dict], layout: Layout) -> dict[str, str]:
    labels = model_labels(rows)
    return {r["row_id"]: f"{labels[model_key(r['model'])]} / {layout.method_label(r['method']['name'])} / "
                         f"{layout.set_label(r['set']['name'])}" for r in rows}


def _row_parts(rows: list[dict], layout: Layout) -> htmlpage.RowParts:
    labels = model_labels(rows)
    return {r["row_id"]: (labels[model_key(r["model"])], layout.set_label(r["set"]["name"])) for r in rows}


# Folders that only publish writes: anything in them that this publish did not write is stale.
OWNED_FOLDERS = ("rows", "results", "plots", "viewer")


def _previous_files(out: Path) -> list[str]:
    try:
        files = json.loads((out / "manifest.json").read_text(encoding="utf-8")).get("files") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [f for f in files if isinstance(f, str)]


def _stale(out: Path, written: set[str], previous: list[str]) -> list[str]:
    """Files of an earlier publish (its manifest, or our own folders) that this one did not write."""
    candidates = set(previous)
    for folder in OWNED_FOLDERS:
        if (out / folder).is_dir():
            candidates |= {p.relative_to(out).as_posix() for p in (out / folder).rglob("*") if p.is_file()}
    root = out.resolve()
    # A manifest never points outside OUT (an edited one must not delete elsewhere).
    return sorted(name for name in candidates - written - {"manifest.json"}
                  if root in (out / name).resolve().parents and (out / name).is_file())


def _probe_results(paths: list[str]) -> list:
    """Reward-robustness results (harness/probe) to publish beside the tables, in the given order."""
    from factrl.harness.probe.tables import load_results

    return [result for path in paths for result in load_results(path)]


def _training(accuracy: Table | None, rows_by_id: dict[str, dict], site: viewerlib.Site, layout: Layout, out: Path,
              files: list[Path]) -> list:
    """Per model of the accuracy table: the overlay of its trained lines' curves and each line's
    own curves (the image its run page shows), linked to the run page."""
    found = []
    for model, lines in (accuracy.groups if accuracy else []):
        entries, overlay_runs = [], []
        for line in lines:
            row = next((rows_by_id[r] for r in line.row_ids if r in rows_by_id), None)
            if row is None or row.get("steps") is None:
                continue  # Raw and evaluation-only lines have no training
            run_id = line.run_ids[0]
            entries.append((line.method_label, site.run_pages.get(run_id), site.curves.get(run_id),
                            "no training curves stored for this run"))
            overlay_runs.append((line.method_label, row.get("training")))
        if not entries:
            continue
        drawn = training_plots.model_overlay(overlay_runs, str(model), out / "plots" /
                                             f"training_{results.safe_name(str(model))}.png")
        if isinstance(drawn, Path):
            files.append(drawn)
        found.append((str(model), drawn.relative_to(out).as_posix() if isinstance(drawn, Path) else None, entries))
    return found


def _stand_in_users(rows: list[dict], layout: Layout) -> list[tuple[str, str, list[str]]]:
    """(label, note, ["model / method", ...]) of every stand-in behind the published rows."""
    labels = model_labels(rows)
    users: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        who = f"{labels[model_key(row['model'])]} / {layout.method_label(row['method']['name'])}"
        for item in componentlib.row_stand_ins(row):
            if who not in users.setdefault(item, []):
                users[item].append(who)
    return [(label, note, who) for (label, note), who in sorted(users.items())]


def publish(store_path: str | os.PathLike, version: str | None, out_dir: str | os.PathLike,
            layout_settings: dict[str, Any] | None = None, *, stamp: bool = False) -> dict[str, Any]:
    """Write all outputs of `version` (None = current) to `out_dir`; returns the manifest.

    Without `stamp` the files carry no generation time (unless SOURCE_DATE_EPOCH is set) and no
    absolute machine path (portable.py), so the same rows publish the same bytes anywhere."""
    version, spec = versions.get_spec(version)
    store = Store(store_path)
    rows = [strip_private(r) for r in store.rows(version)]
    if not rows:
        held = store.versions()
        raise HarnessError(f"no rows of leaderboard version {version} in {store_path}"
                           + (f" (it holds {', '.join(f'{v}: {n} rows' for v, n in held.items())});"
                              if held else ";") + " pass --version or record runs first.")
    layout = Layout({**settings.load(), **(layout_settings or {})})
    out = Path(out_dir)
    reported_files = reportedlib.from_settings(layout.settings)  # a bad file fails before anything is written
    probe_results = _probe_results(layout.settings.get("probe") or [])  # likewise
    viewer_settings = viewerlib.ViewerSettings.from_mapping(layout.settings.get("viewer"))  # likewise
    # The tables see guarded rows under a method name that carries their guards (guards.py):
    # a line of their own; the files of the rows themselves keep the method's name.
    table_rows = [guardslib.table_view(r) for r in rows]
    tables = build_tables(table_rows, layout)
    by_name: dict[str, Table] = {t.name: t for t in tables}
    labels = _row_labels(table_rows, layout)
    previous = _previous_files(out)
    files: list[Path] = []
    generated = _generated(stamp)
    shown_rows = rows if stamp else portable(rows)  # what the files show: no machine paths

    md = [f"# Leaderboard, version {version}", "",
          f"Generated {f'{generated} ' if generated else ''}by factrl-harness "
          f"{__version__}; {len(rows)} rows. Full provenance: index.html and rows/<row_id>.json.", ""]
    md += [formats.markdown(t) for t in tables]
    # The views of Table 1 (tables/ci.py: uncertainty, difference to Raw) in every format;
    # accuracy.csv carries the uncertainty view's figures as columns, vs_raw.csv its own.
    extra = views(by_name.get("accuracy"), layout)
    # How each line answers (format, abstention, length, answer accuracy) against Raw, per set.
    extra += behaviour_tables(by_name.get("accuracy"), table_rows, layout)
    shown_views = list(extra)
    # The papers' numbers beside the measured lines (tables/reported.py), after the uncertainty view.
    reported, comparisons = reported_table.build(by_name.get("accuracy"), table_rows, layout, reported_files)
    shown = [reported] if reported is not None else []
    extra += shown
    for table in extra:
        componentlib.mark_table(table, {r["row_id"]: r for r in table_rows})
        md.append(formats.markdown(table))
    if probe_results:
        from factrl.harness.probe import tables as probe_tables

        md.append(probe_tables.markdown(probe_results))
        files += list(probe_tables.write_tables(probe_results, out).values())
    files.append(_write(out / "leaderboard.md", "\n".join(md)))
    for table in tables + [v for v in shown_views if v.name != "accuracy_ci"] + shown:
        files.append(_write(out / f"{table.name}.csv", formats.csv_text(table)))
    if reported_files:
        files.append(out / "reported.json")
        data = {"schema": "factrl.leaderboard.reported/1", "interval": reported_table.INTERVAL_RULE,
                "files": [f.describe() for f in reported_files], "comparisons": [c.to_dict() for c in comparisons]}
        write_json(files[-1], data if stamp else portable(data))
    files.append(_write(out / "rows.csv", formats.rows_csv(shown_rows)))
    files.append(_write(out / "tables.tex", "\n".join(formats.latex(t, f"tab:{t.name}") for t in tables + extra)))
    for row in shown_rows:
        files.append(out / "rows" / f"{row['row_id']}.json")
        write_json(files[-1], row)
    for run_rows in results.group_by_run(shown_rows).values():
        files.append(out / "results" / f"{results.safe_name(run_rows[0]['run']['run_id'])}.json")
        write_json(files[-1], results.export_results(run_rows))

    figures: list[tuple[str, str]] = []
    notes: list[str] = []
    outcomes = [(plots.accuracy_vs_time(by_name.get("time"), layout, out / "plots" / "accuracy_vs_time.png"),
                 "Macro accuracy against training time, one point per method and model"),
                (plots.gain_heatmap(by_name.get("accuracy"), layout, out / "plots" / "gain_over_raw.png"),
                 "Gain over Raw (percentage points), models by benchmarks")]
    rows_by_id = {r["row_id"]: r for r in rows}
    outcomes += [(p, "Gain over Raw by popularity quartile")
                 for p in plots.popularity_gain(by_name.get("accuracy"), rows_by_id, layout, out / "plots")]
    for outcome, caption in outcomes:
        if isinstance(outcome, Path):
            files.append(outcome)
            figures.append((outcome.relative_to(out).as_posix(), caption))
        else:
            notes.append(outcome)

    # The run viewer (viewer/build.py) and the training curves the index shows under each model.
    site = viewerlib.build(rows, shown_rows, by_name.get("accuracy"), layout, out, probe_results, viewer_settings)
    files += site.files
    viewer = htmlpage.Viewer(runs=site.run_pages, compare=site.compare_pages,
                             samples={r["row_id"]: site.samples_href(r) for r in rows if site.samples_href(r)},
                             training=_training(by_name.get("accuracy"), rows_by_id, site, layout, out, files))

    frozen = {f"versions.py: {k}": v for k, v in spec.items() if k not in ("date", "summary") and v}
    frozen.update({f"store: {k}": v for k, v in store.pins(version).items()})
    meta = [("leaderboard version", version), ("opened", spec.get("date")), ("rows", len(rows)),
            ("harness", __version__), ("commit", git_commit())] + ([("generated", generated)] if generated else [])
    files.append(_write(out / "index.html", htmlpage.page(
        title=f"factrl-harness leaderboard, version {version}", meta=meta, tables=tables[:1] + shown_views + tables[1:],
        rows=shown_rows, row_labels=labels, row_parts=_row_parts(rows, layout), plots=figures, plot_notes=notes,
        frozen=frozen, viewer=viewer, stand_ins=_stand_in_users(table_rows, layout))))
    if reported is not None:
        # Its own page (with the provenance of the measured rows it shows), so index.html keeps
        # the measured tables only and a reader never takes a paper's number for a measured one.
        used = {rid for line in reported.lines for rid in line.row_ids}
        files.append(_write(out / "reported.html", htmlpage.page(
            title=f"Measured vs reported, leaderboard version {version}", meta=meta, tables=[reported],
            rows=[r for r in shown_rows if r["row_id"] in used], row_labels=labels, row_parts=_row_parts(rows, layout),
            plots=[], plot_notes=[], frozen=frozen)))
    written = sorted(p.relative_to(out).as_posix() for p in files)
    stale = _stale(out, set(written), previous)
    manifest = {"schema": "factrl.leaderboard.publish/1", "leaderboard_version": version,
                "store": str(Path(store_path).resolve()) if stamp else Path(store_path).name, "rows": len(rows),
                "tables": [t.name for t in tables],  # the paper-layout tables; reported: the view beside them
                "reported": {"files": [f.describe() for f in reported_files], "table": bool(shown)},
                "probe": {"results": len(probe_results),
                          "files": [str(p) if stamp else portable(str(p)) for p in layout.settings.get("probe") or []]},
                "files": written, "removed": stale, "plot_notes": notes,
                "bootstrap": uncertainty.settings_of(layout.settings).describe(),
                "mde": mde_describe(), "movement": movement.describe(),
                "viewer": {"schema": viewerlib.VIEWER_SCHEMA, "runs": len(site.run_pages),
                           "compare": len(site.compare_pages)},
                "harness_version": __version__, "git_commit": git_commit(),
                **({"generated": generated} if generated else {})}
    write_json(out / "manifest.json", manifest)
    for name in stale:  # only after the new outputs and manifest are in place
        (out / name).unlink(missing_ok=True)
    return manifest
