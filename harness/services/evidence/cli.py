"""`harness evidence`: build, query and inspect evidence stores.

    harness evidence build --demo                           # demo lead sections, into the harness cache
    harness evidence build wiki.jsonl --out wiki.sqlite3    # {title, text} per line
    harness evidence query "Who painted the Mona Lisa?"     # BM25 over the demo store
    harness evidence query "batting hand" --title "Pat Burrell" --store wiki.sqlite3
    harness evidence query --title "Paris;France"           # the articles' passages in order
    harness evidence info [STORE] [--json]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

from ...core.errors import HarnessError
from .passages import DEFAULT_TOKENIZER


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness evidence", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build a store from a JSONL dump or the demo lead sections (offline)")
    build.add_argument("source", nargs="?", help="a .jsonl / .jsonl.gz file with one {title, text} per line")
    build.add_argument("--demo", action="store_true", help="the demo Wikipedia lead sections")
    build.add_argument("--out", help="store file (default for --demo: the harness cache)")
    _add_split_options(build)
    build.add_argument("--text-field", default="text", help="JSONL field holding the text (default text)")
    build.add_argument("--title-field", default="title", help="JSONL field holding the title (default title)")
    build.add_argument("--force", action="store_true", help="rebuild even if the store exists")
    build.add_argument("--no-progress", action="store_true", help="no progress bar")

    query = sub.add_parser("query", help="retrieve passages (for people checking a store)")
    query.add_argument("queries", nargs="*", help="query text; FTS operators in it are plain words")
    query.add_argument("--title", action="append", default=[],
                       help="restrict to these articles (repeat, or ;-joined as in the pool's title field)")
    query.add_argument("-k", type=int, default=5, help="passages per query (default 5)")
    query.add_argument("--store", help="store file (default: the demo store, built on first use)")
    _add_split_options(query)
    query.add_argument("--json", action="store_true", help="one JSON object per query")

    info = sub.add_parser("info", help="print a store's manifest")
    info.add_argument("store", nargs="?", help="store file (default: the demo store)")
    _add_split_options(info)
    info.add_argument("--json", action="store_true", help="the manifest as JSON")
    return parser


def _add_split_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokenizer", default=DEFAULT_TOKENIZER,
                        help=f"passage tokenizer: `words`, a model config name, a local directory or a hub id "
                             f"(default {DEFAULT_TOKENIZER}; for the demo store, which one)")
    parser.add_argument("--passage-tokens", type=int, default=None,
                        help="tokens per passage at most (default: evidence.passage_tokens of evidence=demo)")


def _build(args) -> int:
    from .build import build_store, demo_store_path

    if args.demo == bool(args.source):
        raise HarnessError("give a JSONL file or --demo (not both).")
    if args.source and not args.out:
        raise HarnessError("--out FILE is required when building from a file.")
    out = args.out or demo_store_path(args.tokenizer, args.passage_tokens)
    started = time.time()
    manifest = build_store(None if args.demo else args.source, out, tokenizer=args.tokenizer,
                           passage_tokens=args.passage_tokens, text_field=args.text_field,
                           title_field=args.title_field, force=args.force,
                           progress=False if args.no_progress else None)
    counts = manifest["counts"]
    print(f"evidence store {manifest.path}: {counts['documents']} documents, {counts['passages']} passages "
          f"(<= {manifest['passage_tokens']} {manifest['tokenizer']['spec']} tokens), hash "
          f"{manifest.manifest_hash[:12]} ({time.time() - started:.1f} s)")
    return 0


def _store_path(args):
    from .build import demo_store_path, ensure_demo_store

    if args.store:
        return args.store
    if args.command == "info":
        return demo_store_path(args.tokenizer, args.passage_tokens)
    return ensure_demo_store(args.tokenizer, args.passage_tokens)


def _query(args) -> int:
    from .store import open_store

    if not args.queries and not args.title:
        raise HarnessError('give a query ("Who painted the Mona Lisa?") or --title TITLE.')
    if args.k < 1:
        raise HarnessError("-k must be at least 1.")
    blank = next((n for n, text in enumerate(args.queries, 1) if not text.strip()), None)
    if blank is not None:
        raise HarnessError(f"query {blank} is empty; give words to search for, or --title TITLE alone for an "
                           f"article's passages.")
    titles = ";".join(args.title) or None
    with open_store(_store_path(args)) as store:
        for text in args.queries or [None]:
            started = time.perf_counter()
            passages = store.by_title(titles, args.k) if text is None else store.search(text, args.k, titles=titles)
            ms = (time.perf_counter() - started) * 1e3
            if args.json:
                print(json.dumps({"query": text, "titles": titles, "ms": round(ms, 3),
                                  "passages": [p.__dict__ for p in passages]}, ensure_ascii=False))
                continue
            print(f"{len(passages)} passages for {text or titles!r} ({ms:.2f} ms)")
            for p in passages:
                snippet = p.text if len(p.text) <= 160 else p.text[:157] + "..."
                print(f"  {p.score:8.3f}  [{p.passage_id}] {p.title}: {snippet}")
    return 0


def _info(args) -> int:
    from .schema import read_manifest

    manifest = read_manifest(_store_path(args))
    data = manifest.data
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    src, tok, counts = data["source"], data["tokenizer"], data["counts"]
    print(f"store      {manifest.path}")
    print(f"hash       {manifest.manifest_hash}")
    print(f"format     {data['format_version']} (split rule {data['split_version']}, FTS5 {data['fts']['tokenize']})")
    asset = f" ({src['asset']})" if "asset" in src else ""
    print(f"source     {src['kind']} {src['path']} sha256 {src['sha256']}{asset}")
    print(f"tokenizer  {tok.get('spec')} ({tok.get('cls')}, fingerprint {str(tok.get('fingerprint'))[:12]}); "
          f"passages <= {data['passage_tokens']} tokens (longest {counts['max_passage_tokens']})")
    print(f"counts     {counts['documents']} documents, {counts['titles']} titles, {counts['passages']} passages")
    print(f"built      {data.get('created')} in {data.get('build_seconds')} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    return {"build": _build, "query": _query, "info": _info}[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
