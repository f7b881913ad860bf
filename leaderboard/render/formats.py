"""Markdown, CSV and LaTeX renderings of tables.Table, with escaping.

Every string that comes from data (model and method names, labels, notes) goes through the
format's escape function, so a model called `<b>x</b> & {y}_$` prints as those characters.
Numbers are formatted by the table model (tables/model.py); marks are the format's own markup: Markdown
`**best**` / `<u>second</u>`, LaTeX `\\textbf{}` / `\\underline{}`. A line with a stand-in
reward component carries components.MARKER after its method (LaTeX `\\ddag`; CSV: a
`stand_ins` column) and the table's notes hold the legend.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from ..components import MARKER
from ..diagnostics import FLAG_MARK
from ..marks import METHOD_PROMPT_MARK, RECONSTRUCTED_MARK, SUBSTITUTE_MARK
from ..tables import Cell, Line, Table
from ..tables.movement import EVAL_NOT_MOVED_MARK, NOT_MOVED_MARK
from ..tables.uncertainty import marks, undecided

_MD_SPECIAL = "\\`*_[]|~$#"
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
          "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", MARKER: r"\ddag{}",
          "§": r"\S{}", "±": r"$\pm$", "Δ": r"$\Delta$", "⚑": r"$\triangleright$", "◇": r"$\diamond$",
          RECONSTRUCTED_MARK: r"\P{}", SUBSTITUTE_MARK: r"\textbardbl{}", NOT_MOVED_MARK: r"$\emptyset$",
          EVAL_NOT_MOVED_MARK: r"$\approx$", METHOD_PROMPT_MARK: r"$\ast$"}


def md_escape(text: Any) -> str:
    """Markdown text that renders literally: HTML entities for <>&, backslash for markup."""
    out = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in out)
    return out.replace("\n", " ")


def latex_escape(text: Any) -> str:
    """LaTeX text mode: every special character as its literal command."""
    return "".join(_LATEX.get(ch, ch) for ch in str(text).replace("\n", " "))


def _header_labels(table: Table) -> list[str]:
    return [f"{c.group} {c.label}" if c.group else c.label for c in table.columns]


_TEX_MARKS = (r"\textsuperscript{\ddag}", r"\textsuperscript{\P}", r"\textsuperscript{\textbardbl}",
              r"\textsuperscript{$\emptyset$}", r"\textsuperscript{$\approx$}", r"\textsuperscript{$\ast$}")


def not_moved(line: Line) -> bool:
    """A trained line flagged "did not move" (tables/movement.py)."""
    return bool(line.movement is not None and line.movement.flagged)


def evaluation_not_moved(line: Line) -> bool:
    """A trained line flagged "evaluation did not move" (tables/movement.py, rule v2)."""
    return bool(line.movement is not None and line.movement.evaluation_flat)


def _marked(line: Line, label: str, markers: tuple[str, ...] = (MARKER, RECONSTRUCTED_MARK, SUBSTITUTE_MARK,
                                                                 NOT_MOVED_MARK, EVAL_NOT_MOVED_MARK,
                                                                 METHOD_PROMPT_MARK)) -> str:
    """The (escaped) method label with its provenance marks: stand-in, reconstructed method,
    judge substitute, did not move, evaluation did not move, method prompt (the table's notes
    hold each legend)."""
    shown = "".join(m for m, on in zip(markers, (bool(line.stand_ins), line.reconstructed, bool(line.substitutes),
                                                 not_moved(line), evaluation_not_moved(line), line.method_prompt))
                    if on)
    return f"{label} {shown}" if shown else label


def _diff_marks(cell: Cell) -> str:
    """NOISE_MARK when the focus difference's interval includes 0, UNDECIDED_MARK when it is
    below its MDE (neither without outcomes)."""
    low, high = cell.ci if cell.ci else (None, None)
    return "" if cell.diff is None else marks(cell.diff, low, high, cell.mde)


def _diff_text(cell: Cell) -> str:
    """' (+1.20)', with the uncertainty marks of `_diff_marks`."""
    return "" if cell.diff is None else f" ({cell.diff:+.2f}{_diff_marks(cell)})"


def _flag(cell: Cell) -> str:
    return f" {FLAG_MARK}" if cell.flags else ""


# -- Markdown ------------------------------------------------------------------------------
def _md_cell(cell: Cell) -> str:
    text = md_escape(cell.text)
    if cell.mark == "best":
        text = f"**{text}**"
    elif cell.mark == "second":
        text = f"<u>{text}</u>"
    return text + _diff_text(cell) + _flag(cell)


def markdown(table: Table) -> str:
    first = [md_escape(table.first_header)] if table.first_header or any(g for g, _ in table.groups) else []
    header = first + ["Method"] + [md_escape(h) for h in _header_labels(table)]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(first) + ["---"]
                                                                + ["---:"] * len(table.columns)) + " |"]
    for group, members in table.groups:
        for index, line in enumerate(members):
            lead = [md_escape(group) if index == 0 and group else ""] if first else []
            cells = [_md_cell(line.cells.get(c.key, Cell())) for c in table.columns]
            lines.append("| " + " | ".join(lead + [_marked(line, md_escape(line.method_label))] + cells) + " |")
    for line in table.footer:  # the gaming floor: below the compared lines, never ranked
        lead = [md_escape(line.model)] if first else []
        cells = [_md_cell(line.cells.get(c.key, Cell())) for c in table.columns]
        lines.append("| " + " | ".join(lead + [f"*{md_escape(line.method_label)}*"] + cells) + " |")
    notes = [f"- {md_escape(n)}" for n in table.notes]
    return "\n".join([f"### {md_escape(table.title)}", "", *lines, "", *notes]).rstrip() + "\n"


# -- CSV -----------------------------------------------------------------------------------
def csv_text(table: Table) -> str:
    """Plain values (unrounded, no marks) for other tools; one line per (model, method)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    keys = [c.key for c in table.columns]
    with_diff = [k for k in keys if any(line.cells.get(k, Cell()).diff is not None for line in table.lines)]
    extra = _uncertainty_columns(table, keys)
    writer.writerow(["model", "method", *keys, *[f"{k}_diff" for k in with_diff], *[name for name, _ in extra],
                     "stand_ins", "reconstructed", "judge_substitute", "did_not_move", "evaluation_did_not_move",
                     "runs", "rows"])
    for line in table.lines + table.footer:
        values = [line.cells.get(k, Cell()).value for k in keys]
        diffs = [line.cells.get(k, Cell()).diff for k in with_diff]
        more = [get(line.cells.get(key, Cell())) for key, get in ((k, g) for _, (k, g) in extra)]
        writer.writerow([line.model, line.method, *["" if v is None else round(v, 6) for v in values],
                         *["" if d is None else round(d, 6) for d in diffs],
                         *["" if v is None else (round(v, 6) if isinstance(v, float) else v) for v in more],
                         "; ".join(line.stand_ins), "true" if line.reconstructed else "", "; ".join(line.substitutes),
                         "true" if not_moved(line) else "", "true" if evaluation_not_moved(line) else "",
                         " ".join(line.run_ids), " ".join(line.row_ids)])
    return buffer.getvalue()


_CELL_FIELDS = {
    "n": lambda c: c.n, "se": lambda c: c.se, "seed_std": lambda c: c.std, "seeds": lambda c: c.seeds,
    "diff_low": lambda c: c.ci[0] if c.ci else None, "diff_high": lambda c: c.ci[1] if c.ci else None,
    "vs_raw": lambda c: c.vs_raw[0] if c.vs_raw else None,
    "vs_raw_low": lambda c: c.vs_raw[1] if c.vs_raw else None,
    "vs_raw_high": lambda c: c.vs_raw[2] if c.vs_raw else None,
    "diff_mde": lambda c: c.mde, "vs_raw_mde": lambda c: c.vs_raw_mde,
    "diff_undecided": lambda c: undecided(c.diff, c.mde) if c.mde is not None else None,
    "vs_raw_undecided": lambda c: undecided(c.vs_raw[0], c.vs_raw_mde) if c.vs_raw and c.vs_raw_mde is not None
    else None,
    "flags": lambda c: "; ".join(c.flags) or None, "strict": lambda c: c.strict,
    "strict_gap": lambda c: None if c.strict is None or c.value is None else c.value - c.strict,
    "strict_rule": lambda c: c.strict_rule if c.strict is not None else None,
    "brier": lambda c: c.brier, "ece": lambda c: c.ece}


def _uncertainty_columns(table: Table, keys: list[str]) -> list[tuple[str, tuple[str, Any]]]:
    """(header, (column key, getter)) for each uncertainty field some cell of the column has."""
    out = []
    for key in keys:
        cells = [line.cells[key] for line in table.lines if key in line.cells]
        for name, get in _CELL_FIELDS.items():
            present = [get(c) for c in cells if get(c) is not None]
            if present and not (name == "seeds" and all(v == 1 for v in present)
                                and not any(c.n is not None for c in cells)):
                out.append((f"{key}_{name}", (key, get)))
    return out


ROW_COLUMNS = ("row_id", "leaderboard_version", "model", "model_id", "model_revision", "model_sha256", "method",
               "method_config_hash", "run_id", "seed", "adapter_sha256", "pool_sha256", "set", "task", "set_sha256",
               "limit", "scorer", "scorer_version", "prompt_hash", "metric", "value", "n", "stderr", "train_seconds",
               "gpu_hours", "device", "harness_version", "git_commit", "date", "stand_ins", "components")


def rows_csv(rows: list[dict]) -> str:
    """Long format: one line per stored (row, metric) with its provenance."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(ROW_COLUMNS)
    for row in rows:
        timer = row.get("timer") or {}
        device = timer.get("device") or {}
        for metric, item in sorted(row["metrics"].items()):
            writer.writerow([
                row["row_id"], row["leaderboard_version"], row["model"]["name"], row["model"].get("id"),
                row["model"].get("revision"), row["model"].get("sha256"), row["method"]["name"],
                row["method"]["config_hash"], row["run"]["run_id"], row.get("seed"),
                (row.get("adapter") or {}).get("sha256"), (row.get("pool") or {}).get("sha256"),
                row["set"]["name"], row["set"]["task"], row["set"]["sha256"], row["generation"].get("limit"),
                row["scorer"]["name"], row["scorer"]["version"], row["generation"]["prompt_hash"], metric,
                item["value"], item["n"], item.get("stderr"), timer.get("total_s"), timer.get("gpu_hours"),
                f"{device.get('name')} x{device.get('count')}" if device else "",
                row["harness"]["version"], row["harness"].get("git_commit"), row["date"],
                "; ".join(item["label"] for item in row.get("stand_ins") or []),
                json.dumps(row.get("components") or {}, sort_keys=True)])
    return buffer.getvalue()


# -- LaTeX ---------------------------------------------------------------------------------
def _tex_cell(cell: Cell) -> str:
    text = latex_escape(cell.text).replace("—", "--").replace("×", r"$\times$")
    if cell.mark == "best":
        text = rf"\textbf{{{text}}}"
    elif cell.mark == "second":
        text = rf"\underline{{{text}}}"
    noise = latex_escape(_diff_marks(cell))
    flag = r"\,$\triangleright$" if cell.flags else ""
    return text + ("" if cell.diff is None else rf"\,{{\scriptsize ({cell.diff:+.2f}{noise})}}") + flag


def latex(table: Table, label: str) -> str:
    """A booktabs table (packages: booktabs); paste into a paper as is."""
    has_group_col = bool(table.first_header) or any(g for g, _ in table.groups)
    lead = 2 if has_group_col else 1
    spec = "l" * lead + "r" * len(table.columns)
    out = [f"% {latex_escape(table.title)} -- generated by factrl-harness; needs \\usepackage{{booktabs}}",
           r"\begin{table}[t]", r"\centering", rf"\caption{{{latex_escape(table.title)}}}",
           rf"\label{{{latex_escape(label)}}}", rf"\begin{{tabular}}{{{spec}}}", r"\toprule"]
    if any(c.group for c in table.columns):
        spans, rules, col = [""] * lead, [], lead + 1
        index = 0
        while index < len(table.columns):
            group = table.columns[index].group
            width = 1
            while index + width < len(table.columns) and table.columns[index + width].group == group:
                width += 1
            spans.append(rf"\multicolumn{{{width}}}{{c}}{{{latex_escape(group or '')}}}")
            if group:
                rules.append(rf"\cmidrule(lr){{{col}-{col + width - 1}}}")
            col += width
            index += width
        out += [" & ".join(spans) + r" \\", " ".join(rules)]
    first = [latex_escape(table.first_header)] if has_group_col else []
    out.append(" & ".join(first + ["Method"] + [latex_escape(c.label) for c in table.columns]) + r" \\")
    out.append(r"\midrule")
    for number, (group, members) in enumerate(table.groups):
        if number:
            out.append(r"\midrule")
        for index, line in enumerate(members):
            lead_cells = [latex_escape(group) if index == 0 and group else ""] if has_group_col else []
            cells = [_tex_cell(line.cells.get(c.key, Cell())) for c in table.columns]
            label = _marked(line, latex_escape(line.method_label), _TEX_MARKS)
            out.append(" & ".join(lead_cells + [label] + cells) + r" \\")
    if table.footer:
        out.append(r"\midrule")
    for line in table.footer:
        lead_cells = [latex_escape(line.model)] if has_group_col else []
        cells = [_tex_cell(line.cells.get(c.key, Cell())) for c in table.columns]
        out.append(" & ".join(lead_cells + [rf"\textit{{{latex_escape(line.method_label)}}}"] + cells) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    if table.notes:
        out.append(r"\par\smallskip\footnotesize " + " ".join(latex_escape(n) for n in table.notes))
    out.append(r"\end{table}")
    return "\n".join(out) + "\n"
