"""`harness bundle`: the command line (the bundle itself: harness/engine/bundle/build.py)."""
from __future__ import annotations

from .build import build
from .manifest import report
from .options import check, parser
from .project import find_source, load_project


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)  # --help exits here, before the project is read
    project = load_project(find_source(args.source))
    opts = check(args, requires_python=project.requires_python, extras_known=sorted(project.extras),
                 assets_known=project.asset_names())
    manifest = build(project, opts)
    print(report(manifest, opts.out))
    return 0
