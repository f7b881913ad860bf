"""`harness leaderboard`: add results, list rows, publish a version, export results files.

    harness leaderboard add runs/<run> [results.json ...] [--version V] [--replace]
    harness leaderboard list [--version V | --all] [--method M] [--model M] [--set S] [--json]
    harness leaderboard publish --version V --out DIR [--focus M] [--reference M] [--layout FILE]
                                [--reported FILE ...]
    harness leaderboard export --out DIR [--version V] [--run RUN_ID]
    harness leaderboard rebuild RUNS_DIR... [--version V] [--replace]
                                          a store from finished run directories (cluster jobs
                                          with leaderboard=rundir), in a deterministic order
    harness leaderboard versions          what each version freezes, and this store's pins
    harness leaderboard remove ROW_ID ... delete rows (e.g. a run recorded by mistake)
    harness leaderboard schema row|results|eval-metrics|timings

Every command takes --store PATH (default: `store` in configs/leaderboard/default.yaml,
leaderboard.sqlite in the working directory).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from factrl.harness.core.errors import HarnessError
from factrl.harness.core.rundir import write_json

from . import results, settings
from .record import rows_from_run
from .store import Store, schema, strip_private, versions


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness leaderboard", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", type=Path, default=None, help="the SQLite store (default from config)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    add = sub.add_parser("add", parents=[common], help="validate and store a run directory or results file")
    add.add_argument("paths", nargs="+", type=Path, metavar="RUN_DIR|RESULTS.json")
    add.add_argument("--version", default=None, help="leaderboard version (default: current)")
    add.add_argument("--replace", action="store_true",
                     help="overwrite stored rows whose content differs (default: refuse them; identical rows "
                          "are always left unchanged)")

    lst = sub.add_parser("list", parents=[common], help="list stored rows")
    lst.add_argument("--version", default=None, help="one version (default: current)")
    lst.add_argument("--all", action="store_true", help="every version")
    lst.add_argument("--method")
    lst.add_argument("--model", help="model key (name or name@weights)")
    lst.add_argument("--set", dest="set_name")
    lst.add_argument("--json", action="store_true", help="full records as JSON lines")

    pub = sub.add_parser("publish", parents=[common], help="write Markdown, CSV, LaTeX, HTML, plots and the run viewer")
    pub.add_argument("--version", default=None, help="leaderboard version (default: current)")
    pub.add_argument("--out", type=Path, required=True, help="output folder")
    pub.add_argument("--focus", default=None,
                     help="label this method \"(ours)\" and show its difference to the best competitor "
                          "(default: none, a neutral comparison)")
    pub.add_argument("--reference", default=None, help="method the time ratios divide by")
    pub.add_argument("--layout", type=Path, default=None,
                     help="table layout YAML (default: configs/leaderboard/layout/paper.yaml)")
    pub.add_argument("--reported", action="append", default=None, metavar="FILE",
                     help="reported results to show beside measured rows: a factrl.reported/1 YAML file or a "
                          "shipped name; repeatable; `none` for none (default: the layout's `reported`, the "
                          "CorVer paper's Tables 1 and 10)")
    pub.add_argument("--stamp", action="store_true",
                     help="write the generation time and full machine paths (default: neither, so the same rows "
                          "publish byte-identical files anywhere)")
    pub.add_argument("--probe", action="append", default=None, metavar="PROBE_JSON",
                     help="reward-robustness results (`harness probe --out DIR` writes DIR/probe.json) to "
                          "publish beside the tables; repeatable (one table across all of them)")

    exp = sub.add_parser("export", parents=[common], help="write one results JSON per run")
    exp.add_argument("--out", type=Path, required=True, help="output folder")
    exp.add_argument("--version", default=None)
    exp.add_argument("--run", dest="run_id", default=None, help="only this run id")

    reb = sub.add_parser("rebuild", parents=[common],
                         help="build the store from finished run directories (searched recursively)")
    reb.add_argument("roots", nargs="+", type=Path, metavar="RUNS_DIR")
    reb.add_argument("--version", default=None, help="leaderboard version (default: current)")
    reb.add_argument("--replace", action="store_true",
                     help="replace an existing store that holds rows (default: refuse it)")
    sub.add_parser("versions", parents=[common], help="what each version freezes, and this store's pins")
    rem = sub.add_parser("remove", parents=[common], help="delete rows by id")
    rem.add_argument("row_ids", nargs="+")
    sch = sub.add_parser("schema", help="print a JSON Schema")
    sch.add_argument("name", choices=sorted(schema.SCHEMAS))
    return parser


def _store(args: argparse.Namespace) -> Store:
    return Store(args.store or settings.load()["store"])


def _add(args: argparse.Namespace) -> int:
    store, failures = _store(args), []
    for path in args.paths:
        try:
            if path.is_dir():
                rows = rows_from_run(path, args.version)
            elif path.is_file():
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except ValueError as err:
                    raise HarnessError(f"{path}: not valid JSON ({err})") from None
                rows = results.rows_from_results(data, str(path), args.version)
            else:
                raise HarnessError(f"{path}: no such run directory or results file")
            report = store.add(rows, replace=args.replace)
        except HarnessError as err:
            failures.append(f"{path}: {err}")
            print(f"refused {path}: {err}", file=sys.stderr)
            continue
        print(f"{report.summary()} from {path} (version {rows[0]['leaderboard_version']}) to {store.path}")
    if failures:
        raise HarnessError(f"{len(failures)} of {len(args.paths)} input(s) refused; first: {failures[0]}")
    return 0


def _list(args: argparse.Namespace) -> int:
    version = None if args.all else versions.get_spec(args.version)[0]
    rows = _store(args).rows(version, method=args.method, model=args.model, set_name=args.set_name)
    if args.json:
        for row in rows:
            print(json.dumps(row, sort_keys=True))
        return 0
    header = ("row_id", "ver", "model", "method", "set", "metric", "value", "n", "train", "run_id")
    table = [header]
    from factrl.harness.core.timer import format_hms

    from .store.rows import primary_metrics

    for row in rows:
        key = primary_metrics(row["set"]["task"])[0]
        item = row["metrics"].get(key, {})
        timer = row.get("timer") or {}
        table.append((row["row_id"], row["leaderboard_version"], row["model"]["name"], row["method"]["name"],
                      row["set"]["name"], key, f"{100 * item.get('value', float('nan')):.2f}", str(item.get("n")),
                      format_hms(timer.get("total_s")) if timer else "-", row["run"]["run_id"]))
    widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
    for line in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(line, widths)).rstrip())
    print(f"{len(rows)} row(s)" + ("" if args.all else f" in version {version}"))
    return 0


def _publish(args: argparse.Namespace) -> int:
    from .publishing import publish

    layout = settings.load(args.layout)
    layout.update({k: v for k, v in (("focus_method", args.focus), ("reference_method", args.reference)) if v})
    if args.reported:
        layout["reported"] = args.reported
    if args.probe:
        layout["probe"] = [str(p) for p in args.probe]
    manifest = publish(args.store or layout["store"], args.version, args.out, layout, stamp=args.stamp)
    viewer = manifest.get("viewer") or {}
    print(f"published leaderboard version {manifest['leaderboard_version']} ({manifest['rows']} rows, "
          f"tables: {', '.join(manifest['tables']) or 'none'}; viewer: {viewer.get('runs', 0)} run page(s), "
          f"{viewer.get('compare', 0)} side-by-side page(s)) to {args.out}/index.html")
    for note in manifest["plot_notes"]:
        print(f"  note: {note}")
    return 0


def _export(args: argparse.Namespace) -> int:
    version = versions.get_spec(args.version)[0]
    rows = [strip_private(r) for r in _store(args).rows(version, run_id=args.run_id)]
    if not rows:
        raise HarnessError(f"no rows of version {version}" + (f" for run {args.run_id}" if args.run_id else "")
                           + "; see `harness leaderboard list --all`.")
    for run_id, run_rows in results.group_by_run(rows).items():
        path = args.out / f"{results.safe_name(run_id)}.json"
        write_json(path, results.export_results(run_rows))
        print(path)
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    from .rebuild import rebuild

    report = rebuild(args.roots, args.store or settings.load()["store"], args.version, replace=args.replace)
    for path, reason in report.skipped:
        print(f"skipped {path}: {reason}", file=sys.stderr)
    print(report.summary())
    return 0


def _versions(args: argparse.Namespace) -> int:
    try:
        held = _store(args).versions()
    except HarnessError:
        held = {}
    for name, spec in versions.VERSIONS.items():
        current = " (current)" if name == versions.LEADERBOARD_VERSION else ""
        print(f"version {name}{current}, opened {spec.get('date')}: {spec.get('summary')}")
        print(f"  rows in store: {held.get(name, 0)}")
        for key in ("prompt", "scorers", "sets", "decoding"):
            if spec.get(key):
                print(f"  frozen here  {key}: {versions.canonical(spec[key])}")
        if held.get(name):
            for key, value in _store(args).pins(name).items():
                print(f"  pinned by store  {key}: {versions.canonical(value)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command == "schema":
        print(json.dumps(schema.schema_document(args.name), indent=2))
        return 0
    if args.command == "remove":
        removed = _store(args).remove(args.row_ids)
        print(f"removed {removed} of {len(args.row_ids)} row(s)")
        return 0 if removed == len(args.row_ids) else 1
    handlers = {"add": _add, "list": _list, "publish": _publish, "export": _export, "versions": _versions,
                "rebuild": _rebuild}
    return handlers[args.command](args)
