"""The static HTML page: sortable tables, plots, and a provenance section per stored row.

Everything from data is escaped with html.escape (text and attributes); the page loads no
network resource (inline CSS and JS, a Content-Security-Policy that forbids the rest).
Every table line links to the provenance sections of the rows behind it (`#row-<id>`),
each link labelled by what the line does not already say (the set; the model too where the
table has no model column), and each section links to the row's full JSON record
(`rows/<id>.json`). Differences of the focus method are green when it is ahead, red when
behind; a column where lower is better (times) sorts shortest first on the first click.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from importlib import resources
from typing import Any

from factrl.harness.core.timer import format_hms

from ..components import MARKER, row_stand_ins
from ..diagnostics import FLAG_MARK
from ..marks import METHOD_PROMPT_MARK, RECONSTRUCTED_MARK, SUBSTITUTE_MARK, row_fidelity, row_substitutes
from ..tables import Cell, Line, Table
from ..tables.movement import EVAL_NOT_MOVED_MARK, NOT_MOVED_MARK
from ..tables.uncertainty import MDE_LEGEND_START, NOISE_MARK, includes_zero, marks, undecided

# (model label, set label) of a row, for labelling its links in a table's Provenance cell.
RowParts = dict[str, tuple[str, str]]
# Where a table links: a row's samples in the run viewer, a run's page (viewer/build.py).
Links = dict[str, str]

# Notes that explain a mark rather than a table: printed once, in the page's legend.
LEGEND_STARTS = (f"{MARKER} = ", f"{RECONSTRUCTED_MARK} = ", f"{SUBSTITUTE_MARK} = ", f"{METHOD_PROMPT_MARK} = ",
                 f"{NOISE_MARK} = ",
                 f"{FLAG_MARK} = ", f"{NOT_MOVED_MARK} = ", f"{EVAL_NOT_MOVED_MARK} = ", MDE_LEGEND_START, "Differences without an interval")


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _th(key: str, label: str, group: str | None, kind: str, higher_is_better: bool = True) -> str:
    grp = f'<span class="grp">{_e(group)}</span>' if group else ""
    cls = ' class="text"' if kind == "text" else ""
    better = "" if kind != "num" else f' data-better="{"higher" if higher_is_better else "lower"}"'
    return f'<th data-key="{_e(key)}" data-type="{kind}"{better}{cls} scope="col">{grp}{_e(label)}</th>'


def _td(cell: Cell, samples: Links | None = None, wrap: bool = False) -> str:
    value = "" if cell.value is None else repr(round(float(cell.value), 6))
    text = _e(cell.text)
    if wrap and " · " in cell.text:  # the views' long cells: the value, then each difference on a line of its own
        first, *rest = cell.text.split(" · ")
        text = _e(first) + "".join(f'<br><span class="sub">{_e(part)}</span>' for part in rest)
    if cell.row_ids:
        target = (samples or {}).get(cell.row_ids[0])
        text = (f'<a href="{_e(target)}" title="the samples behind this number">{text}</a>' if target
                else f'<a href="#row-{_e(cell.row_ids[0])}">{text}</a>')
    if cell.mark == "best":
        text = f"<strong>{text}</strong>"
    elif cell.mark == "second":
        text = f"<u>{text}</u>"
    if cell.diff is not None:
        # Classed on the printed value, so "+0.00" is never coloured as a gain or a loss.
        shown = round(cell.diff, 2)
        trend = "up" if shown > 0 else ("down" if shown < 0 else "even")
        noise = cell.ci is not None and includes_zero(*cell.ci)
        if noise:  # inside the interval's noise: grey whatever its sign, with the legend's mark
            trend = "even"
        tips = ([f"95% interval [{cell.ci[0]:+.2f}, {cell.ci[1]:+.2f}]"] if cell.ci else []) + (
            [f"MDE {cell.mde:.2f}" + (" (cannot decide at this n)" if undecided(cell.diff, cell.mde) else "")]
            if cell.mde is not None else [])
        interval = f' title="{_e("; ".join(tips))}"' if tips else ""
        low, high = cell.ci if cell.ci else (None, None)
        text += (f' <span class="diff {trend}"{interval}>({cell.diff:+.2f}'
                 f'{_e(marks(cell.diff, low, high, cell.mde))})</span>')
    if cell.n is not None and cell.value is not None:
        spread = (f"se {cell.se:.2f}" if cell.seeds == 1 and cell.se is not None
                  else f"std {cell.std:.2f} over {cell.seeds} seeds" if cell.std is not None else "")
        tip = [f"n={cell.n}"] + ([spread] if spread else []) + (
            [f"strict v{cell.strict_rule} {cell.strict:.2f} (gap {cell.value - cell.strict:.2f})"]
            if cell.strict is not None else [])
        text = f'<span title="{_e(", ".join(tip))}">{text}</span>'
    if cell.flags:
        text += f' <span class="flag" title="{_e("; ".join(cell.flags))}">{FLAG_MARK}</span>'
    cls = f' class="{cell.mark}"' if cell.mark else ""
    return f'<td data-value="{value}"{cls}>{text}</td>'


def _mark(mark: str, title: str, body: str) -> str:
    """A provenance mark that expands on demand (a click shows what it stands for)."""
    return (f' <details class="mark"><summary class="standin" title="{_e(title)}">{mark}</summary>'
            f'<div class="pop">{body}</div></details>')


def _method_cell(line: Line, runs: Links | None = None) -> str:
    label = _e(line.method_label)
    page = (runs or {}).get(line.run_ids[0]) if line.run_ids else None
    if page:
        label = f'<a class="run" href="{_e(page)}" title="training curves, rollouts and samples of this run">{label}</a>'
    if line.stand_ins:
        label += _mark(MARKER, f"stand-in: {', '.join(line.stand_ins)}",
                       "Stand-in component(s), not paper-faithful: " + "; ".join(f"<b>{_e(s)}</b>" for s in line.stand_ins)
                       + ' (<a href="#legend">legend</a>)')
    if line.reconstructed:
        label += (' <span class="standin" title="reconstructed: no public implementation, the reward is this '
                  f'harness&#x27;s design">{RECONSTRUCTED_MARK}</span>')
    if line.substitutes:
        label += (f' <span class="standin" title="judge substitute: {_e("; ".join(line.substitutes))}">'
                  f"{SUBSTITUTE_MARK}</span>")
    if line.method_prompt:
        label += (' <span class="standin" title="method prompt: the shared prompt plus the method&#x27;s own '
                  f'addition">{METHOD_PROMPT_MARK}</span>')
    if line.movement is not None and line.movement.mark:  # ∅ did not move, ≈ evaluation did not move
        cls = "moved" if line.movement.flagged else "moved eval"
        label += (f' <span class="{cls}" title="{_e(line.movement.text)}">{line.movement.mark} '
                  f"{_e(line.movement.label)}</span>")
    return f'<td class="text">{label}</td>'


def _links(line: Line, row_parts: RowParts, name_model: bool) -> str:
    """Links to the line's rows: by set, grouped under the model's name when the table's
    lines span models (the time table), so two models' TriviaQA links are told apart."""
    groups: dict[str, list[str]] = {}
    for rid in line.row_ids:
        model, set_label = row_parts.get(rid, ("", rid))
        groups.setdefault(model if name_model else "", []).append(
            f'<a href="#row-{_e(rid)}" title="{_e(model)} / {_e(set_label)}">{_e(set_label)}</a>')
    parts = [(f'<span class="pmodel">{_e(model)}:</span> ' if model else "") + " ".join(links)
             for model, links in groups.items()]
    return "".join(f'<span class="pgroup">{part}</span>' for part in parts)


def is_legend(note: str) -> bool:
    return note.startswith(LEGEND_STARTS)


def table_html(table: Table, row_parts: RowParts, runs: Links | None = None, samples: Links | None = None) -> str:
    """A flat sortable table: the model on every line, so sorting never loses it. Its legend
    notes (the marks' explanations) are left to the page's one legend."""
    grouped = bool(table.first_header)
    head = ([_th("model", table.first_header, None, "text")] if grouped else [])
    head += [_th("method", "Method", None, "text")]
    head += [_th(c.key, c.label, c.group, "num", c.higher_is_better) for c in table.columns]
    head.append('<th data-key="provenance" data-type="none" class="text" scope="col">Provenance</th>')
    body = []
    for group, lines in table.groups:
        for line in lines:
            cells = [f'<td class="text model">{_e(group)}</td>'] if grouped else []
            cells.append(_method_cell(line, runs))
            cells += [_td(line.cells.get(c.key, Cell()), samples, table.wrap) for c in table.columns]
            cells.append(f'<td class="prov text">{_links(line, row_parts, not grouped) or "—"}</td>')
            body.append(f'<tr data-method="{_e(line.method)}">{"".join(cells)}</tr>')
    foot: list[str] = []  # in <tfoot>, so sorting the compared lines never moves it
    for line in table.footer:  # the gaming floor, after the compared lines
        cells = [f'<td class="text model">{_e(line.model)}</td>'] if grouped else []
        cells.append(f'<td class="text"><em>{_e(line.method_label)}</em></td>')
        cells += [_td(line.cells.get(c.key, Cell())) for c in table.columns]
        cells.append('<td class="prov text">—</td>')
        foot.append(f'<tr class="floor" data-method="{_e(line.method)}">{"".join(cells)}</tr>')
    notes = "".join(f"<li>{_e(n)}</li>" for n in table.notes if not is_legend(n))
    return (f'<h2 id="{_e(table.name)}">{_e(table.title)}</h2>\n<div class="wide">'
            f'<table class="sortable{" wrap" if table.wrap else ""}" id="t-{_e(table.name)}">\n'
            f'<thead><tr>{"".join(head)}</tr></thead>\n'
            f'<tbody>\n{chr(10).join(body)}\n</tbody>\n'
            + (f'<tfoot>\n{chr(10).join(foot)}\n</tfoot>\n' if foot else "")
            + f'</table></div>\n<ul class="notes">{notes}</ul>\n')


def _kv(items: list[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in items)
    return f'<table class="kv">{rows}</table>'


def _code(value: Any) -> str:
    if isinstance(value, (dict, list)):
        value = json.dumps(value, sort_keys=True)
    return f"<code>{_e(value)}</code>" if value not in (None, "") else "—"


def _components(components: dict[str, Any]) -> str:
    """Each reward component: its label and kind, then every recorded fact as JSON."""
    if not components:
        return "—"
    items = []
    for name, item in sorted(components.items()):
        facts = {k: v for k, v in item.items() if k not in ("label", "kind")}
        items.append(f"<li><b>{_e(name)}</b> ({_e(item.get('kind'))}, {_e(item.get('label'))}) {_code(facts)}</li>")
    return f'<ul class="components">{"".join(items)}</ul>'


def provenance_html(row: dict[str, Any], label: str, runs: Links | None = None) -> str:
    """One stored row's provenance: every field that decides whether two rows compare."""
    model, gen, s = row["model"], row["generation"], row["set"]
    timer = row.get("timer") or {}
    metrics = ", ".join(f"{_e(k)} = {v['value']:.4f} (n={v['n']}"
                        + (f", se={v['stderr']:.4f}" if v.get("stderr") is not None else "") + ")"
                        for k, v in sorted(row["metrics"].items()))
    phases = ", ".join(f"{_e(k)} {format_hms(v['seconds'])}" for k, v in (timer.get("phases") or {}).items()
                       if v.get("seconds"))
    device = timer.get("device") or {}
    fidelity = row_fidelity(row)
    items: list[tuple[str, Any]] = [
        ("run", _code(row["run"]["run_id"]) + f" ({_e(row['run'].get('kind'))}, {_e(row['run'].get('status'))})"),
        ("method", f"{_e(row['method']['name'])} · config {_code(row['method']['config_hash'])}"
                   + (f" · version {_e(row['method'].get('version'))}" if row["method"].get("version") else "")),
        ("run config hash", _code(row.get("config_hash"))),
        ("model", f"{_e(model['name'])} · {_code(model.get('id'))} · revision {_code(model.get('revision'))}"),
        ("weights sha256", _code(model.get("sha256"))),
        ("adapter sha256", _code((row.get("adapter") or {}).get("sha256"))),
        ("seed", _e(row.get("seed"))),
        ("pool", _code(row.get("pool"))),
        ("evaluation set", f"{_e(s['name'])} ({_e(s['task'])}) · {_code(s.get('source'))} · "
                           f"version {_e(s.get('version'))} · {_e(s.get('count'))} questions"
                           + (f" · first {_e(gen.get('limit'))}" if gen.get("limit") else "")),
        ("set sha256", _code(s.get("sha256"))),
        ("scorer", f"{_e(row['scorer']['name'])} {_e(row['scorer']['version'])}"),
        ("generation", f"{_e(gen.get('backend'))} · prompt {_e(gen.get('prompt_version'))} "
                       f"{_code(gen.get('prompt_hash'))} · decoding {_code(gen.get('decoding'))}"),
        ("metrics", metrics),
        ("training time", (f"{format_hms(timer.get('total_s'))} · {timer.get('gpu_hours', 0):.2f} GPU-h · "
                           f"{_e(device.get('name'))} ×{_e(device.get('count'))} · {phases}") if timer else "—"),
        ("steps", _e(row.get("steps") if row.get("steps") is not None else "—")),
        ("harness", f"{_e(row['harness']['version'])} · commit {_code(row['harness'].get('git_commit'))}"),
        ("evaluated / recorded", f"{_e(row.get('evaluated'))} / {_e(row.get('date'))}"),
        ("source", _code(row.get("source"))),
        ("reward components", _components(row.get("components") or {})),
        ("stand-ins", "; ".join(f"{MARKER} {_e(label)}" + (f" ({_e(note)})" if note else "")
                                for label, note in row_stand_ins(row)) or "none recorded"),
        ("fidelity", _e(fidelity) + (f" {RECONSTRUCTED_MARK}" if fidelity == "reconstructed" else "")),
        ("judge substitutes", "; ".join(f"{SUBSTITUTE_MARK} {_e(t)}" for t in row_substitutes(row)) or "none"),
    ]
    rid = _e(row["row_id"])
    page = (runs or {}).get(row["run"]["run_id"])
    viewer = (f' · <a href="{_e(page)}#set={_e(s["name"])}">samples and training of this run</a>' if page else "")
    return (f'<section class="prov" id="row-{rid}"><h3>{_e(label)}</h3>{_kv(items)}'
            f'<p><a href="rows/{rid}.json">rows/{rid}.json</a> (full record){viewer}</p></section>')


@dataclass
class Viewer:
    """What the index links of the run viewer (viewer/build.py): run pages by run id, sample
    views by row id, side-by-side pages, and the training curves of each model's trained lines."""
    runs: Links = field(default_factory=dict)
    samples: Links = field(default_factory=dict)
    compare: list[tuple[str, str, str]] = field(default_factory=list)  # (model, set label, href)
    # (model, overlay image or None, [(line label, run page or None, curves image or None, note)])
    training: list[tuple[str, str | None, list[tuple[str, str | None, str | None, str]]]] = field(default_factory=list)


def _summary(note: str) -> str:
    """A legend note's first clause ('‡ = ran with a stand-in component, not a paper-faithful run'),
    its mark in the marks' colour."""
    cut = min([i for i in (note.find(c, 4) for c in ":;(") if i > 0] + [110])
    head = note[:cut].rstrip(" ,")
    mark, eq, rest = head.partition(" = ")
    if eq and len(mark) <= 2:
        return f'<span class="standin">{_e(mark)}</span> {_e(rest)}'
    return _e(head)


def legend_html(tables: list[Table], stand_ins: list[tuple[str, str, list[str]]]) -> str:
    """The page's one legend: each mark's explanation once, expanding on demand; the stand-ins
    one by one ((label, note, lines that used it)) instead of a footnote under every table."""
    found: dict[str, str] = {}
    for table in tables:
        for note in table.notes:
            if is_legend(note):
                start = next(s for s in LEGEND_STARTS if note.startswith(s))
                if len(note) > len(found.get(start, "")):
                    found[start] = note
    items = []
    if stand_ins:
        found.pop(f"{MARKER} = ", None)
        inner = "".join(f"<li><b>{_e(label)}</b>" + (f": {_e(note)}" if note else "")
                        + f' <span class="muted">(used by {_e(", ".join(users))})</span></li>'
                        for label, note, users in stand_ins)
        items.append(f'<details><summary><span class="standin">{MARKER}</span> stand-in component: not a '
                     f'paper-faithful run ({len(stand_ins)})</summary><ul>{inner}</ul></details>')
    for note in found.values():
        items.append(f"<details><summary>{_summary(note)}</summary><p>{_e(note)}</p></details>")
    if not items:
        return ""
    return '<section id="legend" class="legend"><h2>Legend</h2>' + "".join(items) + "</section>"


def viewer_html(viewer: Viewer) -> str:
    parts = []
    if viewer.compare:
        parts.append('<h2 id="side-by-side">Side by side, per question</h2><ul class="compare">')
        models: dict[str, list[str]] = {}
        for model, label, href in viewer.compare:
            models.setdefault(model, []).append(f'<a href="{_e(href)}">{_e(label)}</a>')
        parts += [f"<li>{_e(model)}: {' · '.join(links)}</li>" for model, links in models.items()]
        parts.append("</ul>")
    if viewer.training:
        parts.append('<h2 id="training">Training curves</h2>')
        for model, overlay, lines in viewer.training:
            parts.append(f"<h3>{_e(model)}</h3>")
            if overlay:
                parts.append(f'<figure class="curves"><img src="{_e(overlay)}" alt="{_e(model)}: training curves">'
                             "</figure>")
            for label, page, image, note in lines:
                name = f'<a href="{_e(page)}">{_e(label)}</a>' if page else _e(label)
                parts.append(f'<figure class="curves"><figcaption>{name}</figcaption>'
                             + (f'<img src="{_e(image)}" alt="{_e(label)}: training curves" loading="lazy">' if image
                                else f'<p class="muted">{_e(note)}</p>') + "</figure>")
    return "\n".join(parts)


def page(*, title: str, meta: list[tuple[str, Any]], tables: list[Table], rows: list[dict],
         row_labels: dict[str, str], row_parts: RowParts, plots: list[tuple[str, str]], plot_notes: list[str],
         frozen: dict[str, Any], viewer: Viewer | None = None,
         stand_ins: list[tuple[str, str, list[str]]] | None = None) -> str:
    """The whole page; `row_labels` head the provenance sections, `row_parts` label the
    tables' links; `plots` are (relative path, caption), `frozen` the version's pins; `viewer`
    the run viewer's links and training curves; `stand_ins` the legend's stand-ins."""
    viewer = viewer or Viewer()
    legend = legend_html(tables, stand_ins or [])
    jumps = ([("legend", "legend")] if legend else []) + [(t.name, t.title.split(" (")[0]) for t in tables[:1]]
    jumps += ([("side-by-side", "side by side")] if viewer.compare else []) + (
        [("training", "training curves")] if viewer.training else []) + (
        [("plots", "plots")] if plots or plot_notes else []) + [("provenance", "provenance")]
    parts = [f"<header><h1>{_e(title)}</h1><p class=\"meta\">"
             + " · ".join(f"{_e(k)}: {_e(v)}" for k, v in meta) + "</p><nav>"
             + " · ".join(f'<a href="#{_e(k)}">{_e(v)}</a>' for k, v in jumps) + "</nav></header>"]
    parts.append(legend)
    parts += [table_html(t, row_parts, viewer.runs, viewer.samples) for t in tables] or ["<p>No rows in this version.</p>"]
    parts.append(viewer_html(viewer))
    if plots or plot_notes:
        parts.append('<h2 id="plots">Plots</h2>')
        parts += [f'<figure><img src="{_e(path)}" alt="{_e(caption)}"><figcaption>{_e(caption)}</figcaption></figure>'
                  for path, caption in plots]
        parts.append('<ul class="notes">' + "".join(f"<li>{_e(n)}</li>" for n in plot_notes) + "</ul>")
    parts.append('<h2 id="frozen">What this version freezes</h2>')
    parts.append(_kv([(k, _code(v)) for k, v in frozen.items()]))
    parts.append('<h2 id="provenance">Provenance</h2>')
    parts += [provenance_html(row, row_labels.get(row["row_id"], row["row_id"]), viewer.runs) for row in rows]
    template = resources.files("factrl.leaderboard").joinpath("templates", "page.html").read_text(encoding="utf-8")
    head, tail = template.split("@@BODY@@")  # split, not replace: data never meets a placeholder
    return head.replace("@@TITLE@@", _e(title)) + "\n".join(parts) + tail
