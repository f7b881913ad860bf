"""`publish:` of a grid file: after its cells finished and received a signal, rebuild a leaderboard
store from the grid's run directories, run the reward-robustness probe over the named methods, and
publish both together (configs/grid/demo.yaml).

    publish:
      out: site                  # under the grid's output_dir
      store: leaderboard.sqlite  # under the grid's output_dir; rebuilt from the run directories
      probe: {methods: [corver, fspo], questions: 20}   # optional

The store is rebuilt (`harness leaderboard rebuild --replace`), never appended to, so rerunning the
grid republishes the same rows; the probe uses the grid's own overrides (model, pool, judge, ...)
with each method in turn, as `harness probe -m method=...` would; the published page carries the
"Difference to Raw" table (every line's difference to Raw with its paired bootstrap interval and
MDE, leaderboard/tables/ci.py), the behaviour tables, each trained method's training curves with its
"did not move" (∅) or "evaluation did not move" (≈) flag (leaderboard/tables/movement.py), the
probe's table, and the run viewer: a page per cell with its training rollouts step by step and its
evaluation samples, and every method's answers side by side (leaderboard/viewer/, which reads the probe's verdicts for its gaming flags).
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:  # pragma: no cover
    from .expand import Grid

def _probe(grid: "Grid", probe: dict, out: Path) -> Path:
    """Probe each named method with the grid's overrides; the results file (probe.json)."""
    from ..config import compose
    from ...probe import probe_method, write_tables

    cell = grid.cells[0]
    results = []
    for method in probe["methods"]:
        started = time.monotonic()
        cfg = compose([*cell.fixed, f"method={method}", f"model={cell.model}", f"seed={cell.seed}"])
        results.append(probe_method(cfg, n=int(probe["questions"])))  # filled in by check_settings
        print(f"  probe: {method} ({time.monotonic() - started:.1f} s)", flush=True)
    return write_tables(results, out)["json"]


def publish_grid(grid: "Grid", output_dir: str) -> Path | None:
    """Rebuild the grid's store, probe, publish; the published index.html (None: no `publish:`)."""
    settings = grid.publish
    if not settings:
        return None
    from factrl.leaderboard import settings as layout_settings
    from factrl.leaderboard.publishing import publish
    from factrl.leaderboard.rebuild import rebuild

    root = Path(output_dir)
    store, site = root / settings["store"], root / settings["out"]
    started = time.monotonic()
    runs = sorted({str(c.run_dir) for c in grid.cells if c.run_dir is not None and c.status == "done"})
    report = rebuild([Path(r) for r in runs], store, replace=True)
    print(f"  store: {report.summary()}", flush=True)
    layout = layout_settings.load()
    if settings.get("probe"):
        layout["probe"] = [str(_probe(grid, settings["probe"], root / "probe"))]
    manifest = publish(store, None, site, layout)
    viewer = manifest.get("viewer") or {}
    print(f"published grid {grid.name} ({manifest['rows']} rows, tables: {', '.join(manifest['tables'])}"
          f"{', probe' if settings.get('probe') else ''}; viewer: {viewer.get('runs', 0)} run page(s), "
          f"{viewer.get('compare', 0)} side-by-side page(s)) to {site}/index.html in {time.monotonic() - started:.1f} s")
    return site / "index.html"
