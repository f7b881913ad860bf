"""`harness index`: build, query and inspect infini-gram indexes.

    harness index build --demo                                  # the demo index, into the cache
    harness index build corpus.jsonl --out DIR [--tokenizer T]  # your own corpus
    harness index query "Paris AND France"                      # on the demo index
    harness index query --pair "Stanley Kubrick" "2001: A Space Odyssey"
    harness index query "Paris AND France" --index DIR --backend exact
    harness index info [DIR]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from importlib import resources
from typing import Any

from ...core.errors import ConfigError, HarnessError

CORPUS_OPTIONS = ("demo", "wikipedia", "remote")


def corpus_config(name: str) -> dict[str, Any]:
    """A configs/corpus option as a plain dict."""
    from omegaconf import OmegaConf

    path = resources.files("factrl.configs").joinpath("corpus", f"{name}.yaml")
    if not path.is_file():
        raise ConfigError(f"--corpus {name}: no such corpus option; choose one of {', '.join(CORPUS_OPTIONS)}.")
    return OmegaConf.to_container(OmegaConf.load(str(path)), resolve=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness index", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build an index from JSONL/text files or the demo corpus (offline)")
    build.add_argument("inputs", nargs="*", help=".jsonl/.jsonl.gz/.txt files or folders")
    build.add_argument("--demo", action="store_true", help="index the demo Wikipedia lead sections")
    build.add_argument("--out", help="index directory (default for --demo: the harness cache)")
    build.add_argument("--tokenizer", default="smollm2-135m",
                       help="model config name, local tokenizer directory or hub id (default: smollm2-135m)")
    build.add_argument("--text-field", default="text", help="JSONL field holding the document text")
    build.add_argument("--split-lines", action="store_true", help="each line of a .txt file is a document")
    build.add_argument("--cpus", type=int, default=os.cpu_count() or 1,
                       help="CPUs for the suffix array (corpora under 64 MiB always use one)")
    build.add_argument("--force", action="store_true", help="rebuild even if the index exists")

    query = sub.add_parser("query", help="count queries on an index (for people checking an index)")
    query.add_argument("queries", nargs="*", help='queries in infini-gram syntax: "Paris AND France OR Germany"')
    query.add_argument("--pair", nargs=2, metavar=("HEAD", "TAIL"), help="build the CorVer query of a pair")
    query.add_argument("--relation", help="with --pair: the RELCHECK query (head, relation, tail)")
    _add_index_options(query)
    query.add_argument("--backend", choices=("local", "exact", "remote"), help="override the corpus backend")
    query.add_argument("--max-diff-tokens", type=int, help="override corpus.max_diff_tokens")
    query.add_argument("--max-clause-freq", type=int, help="override corpus.max_clause_freq")
    query.add_argument("--no-cache", action="store_true", help="do not read or write the count cache")
    query.add_argument("--json", action="store_true", help="one JSON object per query")

    info = sub.add_parser("info", help="show an index's manifest and validate its files")
    info.add_argument("index_dir", nargs="?", help="index directory (default: the corpus option's index)")
    info.add_argument("--corpus", default="demo", choices=CORPUS_OPTIONS)
    info.add_argument("--tokenizer", help="override the corpus tokenizer (for the demo index location)")
    info.add_argument("--token-dtype", choices=("u16", "u32"), help="for an index without a manifest")
    info.add_argument("--verify", action="store_true", help="also open it with the engine in a child process")
    return parser


def _add_index_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corpus", default="demo", choices=CORPUS_OPTIONS, help="corpus option (default demo)")
    parser.add_argument("--index", help="index directory (overrides the corpus option's index_dir)")
    parser.add_argument("--tokenizer", help="override the corpus tokenizer")
    parser.add_argument("--token-dtype", choices=("u16", "u32"), help="for an index without a manifest")


def _build(args) -> int:
    from .build import build_index, demo_index_dir
    from .sources import demo_corpus_path
    from .tokens import identify, load_index_tokenizer

    if args.demo == bool(args.inputs):
        raise HarnessError("give corpus files or folders, or --demo (not both).")
    if args.inputs and not args.out:
        raise HarnessError("--out DIR is required when building from files.")
    if args.cpus < 1:
        raise HarnessError("--cpus must be at least 1.")
    tokenizer = load_index_tokenizer(args.tokenizer)
    identity = identify(tokenizer, args.tokenizer)
    inputs = [str(demo_corpus_path())] if args.demo else args.inputs
    out = args.out or str(demo_index_dir(identity))
    started = time.time()
    info = build_index(out, inputs, tokenizer, identity, text_field=args.text_field, split_lines=args.split_lines,
                       cpus=args.cpus, force=args.force, corpus_kind="demo" if args.demo else "files")
    manifest = info.manifest or {}
    print(f"index {info.path}: {info.documents} documents, {info.tokens} tokens, {info.token_dtype}, "
          f"tokenizer {identity.spec}, hash {info.manifest_hash[:12]} "
          f"(built in {manifest.get('build', {}).get('seconds', '?')} s; {time.time() - started:.1f} s total)")
    return 0


def _query_config(args) -> dict[str, Any]:
    cfg = corpus_config(args.corpus)
    if args.index:
        cfg.update(index_dir=args.index, source="path")
    for key, value in (("tokenizer", args.tokenizer), ("token_dtype", args.token_dtype), ("backend", args.backend),
                       ("max_diff_tokens", args.max_diff_tokens), ("max_clause_freq", args.max_clause_freq)):
        if value is not None:
            cfg[key] = value
    if args.no_cache:
        cfg["cache"] = False
    return cfg


def _query(args) -> int:
    from .counter import open_counter
    from .query import build_query, format_query

    todo: list[tuple[str, Any]] = [(text, text) for text in args.queries]
    if args.pair:
        terms = build_query(args.pair[0], args.pair[1], args.relation)
        if terms is None:
            need = 3 if args.relation else 2
            raise HarnessError(f"--pair {args.pair!r}: fewer than {need} distinct content terms; no query to count.")
        todo.append((format_query([[t] for t in terms]), [[t] for t in terms]))
    if not todo:
        raise HarnessError('give a query ("Paris AND France") or --pair HEAD TAIL.')
    failed = 0
    with open_counter(_query_config(args)) as counter:
        for label, query in todo:
            started = time.perf_counter()
            result = counter.count_cnf(query)
            ms = (time.perf_counter() - started) * 1e3
            failed += not result.ok
            if args.json:
                print(json.dumps({"query": label, "count": result.count, "approx": result.approx,
                                  "error": result.error, "cached": result.cached, "ms": round(ms, 3)}))
            elif result.ok:
                flags = " approx" if result.approx else ""
                print(f"{result.count:>10}{flags}  {label}  ({ms:.2f} ms{', cached' if result.cached else ''})")
            else:
                print(f"{'failed':>10}  {label}  ({result.error})")
    return 1 if failed else 0


def _info(args) -> int:
    from . import layout

    cfg = corpus_config(args.corpus)
    index_dir = args.index_dir or cfg.get("index_dir")
    if not index_dir:
        from .build import demo_index_dir
        from .tokens import identify, load_index_tokenizer

        spec = args.tokenizer or cfg["tokenizer"]
        index_dir = str(demo_index_dir(identify(load_index_tokenizer(spec), spec)))
    if index_dir == "???":
        raise HarnessError(f"--corpus {args.corpus} has no index_dir; give the directory: harness index info DIR.")
    info = layout.inspect_index(index_dir, args.token_dtype or cfg.get("token_dtype"))
    manifest = info.manifest or {}
    print(f"index      {info.path}")
    print(f"hash       {info.manifest_hash}")
    print(f"dtype      {info.token_dtype} ({len(info.shards)} shard(s), {info.documents} documents, "
          f"{info.tokens} tokens)")
    if manifest:
        tok = manifest.get("tokenizer", {})
        print(f"tokenizer  {tok.get('spec')} ({tok.get('cls')}, vocabulary {tok.get('vocab_size')}, "
              f"fingerprint {str(tok.get('fingerprint'))[:12]})")
        print(f"corpus     {manifest.get('corpus', {}).get('kind')} sha256 {manifest.get('corpus', {}).get('sha256')}")
        prefix = manifest.get("document_prefix")
        print(f"format     {manifest.get('format_version')}"
              + (f" (documents tokenised after {prefix!r})" if prefix is not None else
                 " (documents tokenised alone: a byte-level tokenizer's first words are unfindable; rebuild with "
                 "`harness index build ... --force`)"))
        print(f"built      {manifest.get('build', {}).get('created')} in {manifest.get('build', {}).get('seconds')} s")
    else:
        print("manifest   none (built elsewhere); files checked for consistency only")
    if args.verify:
        from .probe import probe

        info.engine_path = layout.engine_path(info.path)
        result = probe(info.engine_path, info.token_dtype, 65535 if info.token_dtype == "u16" else 1 << 31, 0, [])
        print(f"engine     opened in a child process; {result['count']['count']} token positions")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    return {"build": _build, "query": _query, "info": _info}[args.command](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
