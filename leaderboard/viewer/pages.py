"""The HTML of the viewer's pages: one per run, one per (model, set) side by side.

The page itself is static and small: what the store says of the run (method, model, seed,
stand-ins and the other provenance marks, the movement verdict, the adapter's change), its
training curves (the PNG the index shows too), one legend, the list of what its run directory
lacks, and empty sections that viewer.js fills from the shards. Everything from data is escaped
with html.escape; the pages run no inline script (their Content-Security-Policy forbids it) and
load only the site's own files.
"""
from __future__ import annotations

from html import escape
from typing import Any

from ..components import MARKER
from ..marks import RECONSTRUCTED_MARK, SUBSTITUTE_MARK
from ..tables.movement import EVAL_NOT_MOVED_MARK, NOT_MOVED_MARK

CSP = ("default-src 'none'; script-src 'self' file:; style-src 'self' file: 'unsafe-inline'; "
       "img-src 'self' file: data:")


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _head(title: str, root: str, page: str, index: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_e(title)}</title>\n"
            f'<link rel="stylesheet" href="{_e(root)}viewer/assets/viewer.css">\n'
            f'<script src="{_e(root)}viewer/assets/viewer.js" defer></script>\n'
            f'<script src="{_e(root)}viewer/assets/viewer-{_e(page)}.js" defer></script>\n</head>\n'
            f'<body data-page="{_e(page)}" data-root="{_e(root)}" data-index="{_e(index)}">\n<main>\n')


TAIL = "</main>\n</body>\n</html>\n"


def legend(kind: str) -> str:
    """The page's one legend: sentence colours, verdicts, flags and the provenance marks."""
    scale = "".join(f'<span style="background: {c}"></span>' for c in (
        "rgba(220, 38, 38, 0.73)", "rgba(220, 38, 38, 0.45)", "rgba(148, 163, 184, 0.35)", "rgba(22, 163, 74, 0.45)",
        "rgba(22, 163, 74, 0.73)"))
    parts = []
    if kind == "run":
        parts += [f'<span><span class="scale">{scale}</span> sentence reward: red costs, green pays, grey 0; '
                  "the darkest is the run's largest |value|</span>",
                  '<span><span class="swatch s none" style="border-bottom: 1px dotted #999"></span>scored, no value '
                  "(a failed judge item)</span>",
                  '<span><span class="chip nosig">no signal: reason</span> no reward reached the loss</span>',
                  "<span>click a sentence: its value and verdicts</span>"]
    parts += ['<span><span class="ok">✓ right</span> / <span class="bad">✗ wrong</span> / <span class="na">— '
              "abstained</span>: the protocol's verdict; strict: strict accuracy v2 withdrew the credit</span>",
              '<span><span class="flag" style="display: inline">⚑</span> gaming flag: strict v2 reason, hedged '
              "answer, collapse onto the run's top answer, or a trick the probe found the reward pays</span>",
              f"<span>{MARKER} stand-in · {RECONSTRUCTED_MARK} reconstructed · {SUBSTITUTE_MARK} judge substitute · "
              f"{NOT_MOVED_MARK} did not move · {EVAL_NOT_MOVED_MARK} evaluation did not move</span>"]
    return '<section class="box" id="legend"><b>Legend</b><div class="legend">' + "".join(parts) + "</div></section>\n"


def marks_box(stand_ins: list[tuple[str, str]], reconstructed: bool, substitutes: list[str]) -> str:
    """The run's provenance marks, always shown (a page never hides that a component was a stand-in)."""
    items = [f'<li><span class="standin">{MARKER}</span> stand-in: <b>{_e(label)}</b>'
             + (f" ({_e(note)})" if note else "") + "</li>" for label, note in stand_ins]
    if reconstructed:
        items.append(f'<li><span class="standin">{RECONSTRUCTED_MARK}</span> reconstructed: the method has no public '
                     "implementation; its reward is this harness's design from the paper</li>")
    items += [f'<li><span class="standin">{SUBSTITUTE_MARK}</span> judge substitute: {_e(text)}</li>'
              for text in substitutes]
    if not items:
        return ('<section class="box" id="stand-ins"><b>Stand-ins:</b> none recorded (every reward component as '
                "the method's paper uses it, or a run recorded before components were).</section>\n")
    return (f'<section class="box warn" id="stand-ins"><b>Not a paper-faithful run:</b><ul>{"".join(items)}</ul>'
            "</section>\n")


def run_page(*, title: str, root: str, index_key: str, facts: list[tuple[str, str]], marks: str, movement: str,
             curves: str | None, curves_note: str | None, missing: list[str], trained: bool,
             links: list[tuple[str, str]]) -> str:
    """A run's page; `facts` are (label, already-escaped HTML) pairs, `links` (href, text)."""
    nav = " · ".join(f'<a href="{_e(href)}">{_e(text)}</a>' for href, text in links)
    parts = [_head(title, root, "run", index_key), f"<nav>{nav}</nav>\n<header><h1>{_e(title)}</h1>",
             '<p class="meta">' + " · ".join(f"{_e(k)}: {v}" for k, v in facts) + "</p></header>\n", marks]
    if movement:
        parts.append(movement)
    parts.append(legend("run"))
    if missing:
        parts.append('<section class="box" id="missing"><b>What this run directory lacks</b> (the viewer shows the '
                     'rest):<ul class="missing">' + "".join(f"<li>{_e(m)}</li>" for m in missing) + "</ul></section>\n")
    if trained:
        parts.append('<h2 id="curves">Training curves</h2>\n')
        parts.append(f'<figure><img src="{_e(curves)}" alt="training curves"></figure>\n' if curves
                     else f'<p class="muted">{_e(curves_note or "no training curves")}</p>\n')
        parts.append('<section id="rollouts"><h2>Training rollouts, step by step</h2>'
                     '<div class="controls"></div><div class="view">loading…</div></section>\n')
    parts.append('<section id="samples"><h2>Evaluation samples</h2><div class="controls"></div>'
                 '<div class="view">loading…</div></section>\n')
    return "".join(parts) + TAIL


def compare_page(*, title: str, root: str, index_key: str, methods: list[tuple[str, str]], note: str,
                 links: list[tuple[str, str]]) -> str:
    """The side-by-side page of one model and set; `methods` are (label, run page href)."""
    nav = " · ".join(f'<a href="{_e(href)}">{_e(text)}</a>' for href, text in links)
    runs = " · ".join(f'<a href="{_e(href)}">{_e(label)}</a>' for label, href in methods)
    return (_head(title, root, "compare", index_key) + f"<nav>{nav}</nav>\n<header><h1>{_e(title)}</h1>"
            f'<p class="meta">Runs: {runs}</p><p class="small muted">{_e(note)}</p></header>\n' + legend("compare")
            + '<section id="compare"><div class="controls"></div><div class="view">loading…</div></section>\n' + TAIL)
