"""Per-step reward time of the baselines next to CorVer, on the same batches, in one run.

    python benchmarks/bench_rewards.py [--model smollm2-135m] [--questions 3] [--completions 16]
                                       [--steps 3] [--columns corver,fspo,fspo-hhem-tiny]

Each column is one method's reward callable built the way `harness run` builds it for the
embedded models (CorVer: heuristic extractor + demo infini-gram index; FSPO: demo evidence
store + the lexical NLI stand-in; KnowRL, FoRAG and RLFH: the real judge client against a local
judge that waits `--judge-latency` seconds per request (0.2 s; `--judge-url URL --judge-model
NAME` for a real server), the demo evidence store and, KnowRL only, the lexical NLI stand-in;
`fspo-hhem-tiny`: FSPO through the real HHEM model path
with a tiny random HHEM-shaped checkpoint built here, so batching and tokenisation costs
show; `--nli-model DIR --nli-foundation DIR` adds `fspo-hhem` with a real HHEM copy);
`knowrl-reference`, `rlfh-reference`, `forag-reference`: the reward built as training builds it
with `judge=reference` (the embedded models' default; whole steps: bench_method_steps.py).
Every column scores the same `--steps` generation batches (plus one warm-up batch) of Q x G
synthetic completions from the demo pool rows whose titles the demo store holds: reasoning sentences taken from the row's evidence
articles (some factual, one false), right and wrong answers, and format failures, so every
reward runs its whole path. Batches use different questions (caches warm only as in training).

Printed per column: mean and median reward seconds per step, the ratio to CorVer, and the
sentences the reward scored per step (its `sentences` diagnostic; nan if it has none). The
paper's ratios are for complete training runs (FSPO 5.52x, KnowRL 8.77x CorVer's time,
docs/PROTOCOL.md §7), not reward time alone; on CPU with tiny models these numbers show the reward's
own overhead only.

Adding a column: `@column("name")` on a `build(bench: Bench) -> reward callable`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `tests.nli.tiny_models` for the tiny HHEM

BASELINE = "corver"
FALSE_SENTENCE = "It was founded in 1850 by Napoleon on the Moon."


@dataclass
class Bench:
    """What a column builder may use: the composed config, tokenizer, scratch dir, options."""

    model: str
    tokenizer: Any
    tmp: Path
    options: argparse.Namespace
    notes: dict[str, str] = field(default_factory=dict)

    def compose(self, *overrides: str):
        from factrl.harness.engine.config import compose

        return compose([f"model={self.model}", *overrides])


COLUMNS: dict[str, Callable[[Bench], Any]] = {}


def column(name: str):
    """Register a column builder under `name` (the order of registration is the default order)."""
    def register(fn):
        if name in COLUMNS:
            raise ValueError(f"benchmark column {name!r} is registered twice")
        COLUMNS[name] = fn
        return fn
    return register


@column("corver")
def build_corver(bench: Bench):
    from factrl.methods.corver import reward_from_config

    cfg = bench.compose("method=corver", "method.extractor.backend=heuristic")
    bench.notes["corver"] = "heuristic extractor, demo infini-gram index"
    return reward_from_config(cfg.method, tokenizer=bench.tokenizer, corpus_cfg=cfg.corpus)


def _fspo(bench: Bench, nli: dict, note: str, name: str):
    from factrl.methods.fspo import reward_from_config

    cfg = bench.compose("method=fspo")
    bench.notes[name] = note
    return reward_from_config({**dict(cfg.method), "nli": nli}, tokenizer=bench.tokenizer, evidence_cfg=cfg.evidence)


@column("fspo")
def build_fspo(bench: Bench):
    return _fspo(bench, {"backend": "standin"}, "demo evidence store, lexical NLI stand-in (embedded default)", "fspo")


@column("fspo-hhem-tiny")
def build_fspo_tiny_hhem(bench: Bench):
    from tests.nli.tiny_models import build_hhem, build_t5_foundation

    foundation = build_t5_foundation(bench.tmp / "flan-t5")
    hhem = build_hhem(bench.tmp / "hhem", foundation)
    return _fspo(bench, {"backend": "hhem", "model": str(hhem), "foundation": str(foundation)},
                 "demo evidence store, tiny random HHEM-shaped model (real loading and batching path)",
                 "fspo-hhem-tiny")


def build_fspo_hhem(bench: Bench):
    """Only with --nli-model: a real HHEM-2.1-Open copy on disk."""
    nli = {"backend": "hhem", "model": bench.options.nli_model, "foundation": bench.options.nli_foundation}
    return _fspo(bench, nli, f"demo evidence store, HHEM from {bench.options.nli_model}", "fspo-hhem")


class LatencyJudge(ThreadingHTTPServer):
    """A local OpenAI-compatible judge that waits `latency` seconds per request (a remote
    judge's round trip), then grades A when the answer occurs in the gold line (else B) and
    lists the text's sentences of >= 3 words as atomic facts."""

    daemon_threads = True
    request_queue_size = 64  # 16 requests in flight: the default backlog of 5 drops connections

    def __init__(self, latency: float):
        super().__init__(("127.0.0.1", 0), _LatencyHandler)
        self.latency = latency
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _LatencyHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - /v1/models, for the judge's preflight
        self._send({"object": "list", "data": [{"id": "bench-judge", "object": "model"}]})

    def do_POST(self):  # noqa: N802
        from factrl.harness.services.judge.prompts import find_material

        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.server.latency)
        text = body["messages"][0]["content"]  # the prompt itself (a re-ask appends turns after it)
        if "\nPredicted answer: " in text:  # knowrl_grade: A when the answer occurs in the gold target
            gold = re.search(r"^Gold target: (.*)$", text, re.MULTILINE).group(1).lower()
            answer = _unwrapped(text.rsplit("\nPredicted answer: ", 1)[1].split("\n---", 1)[0])
            reply = "A" if answer.strip().lower() in gold else "B"
        elif text.rstrip().endswith("\nFacts:"):  # knowrl_atomic_facts: the text's sentences of >= 3 words
            inner = _unwrapped(text.rsplit("\nText: ", 1)[1].rsplit("\nFacts:", 1)[0])
            facts = [s for s in re.split(r"(?<=[.!?])\s+", inner.strip()) if len(s.split()) >= 3]
            reply = "\n".join(f"- {s}" for s in facts) or "NON_FACTUAL: no facts"
        elif "Sentence to split:" in text:  # forag_decompose: the sentence is its one sub-claim
            sentence = text.split("<<<", 1)[-1].rsplit(">>>", 1)[0].strip()
            reply = f"- {sentence}" if len(sentence.split()) >= 3 else "NO_CLAIMS"
        elif "SUPPORTED or NOT_SUPPORTED" in text:  # forag_verify: supported when the evidence holds it
            claim = re.search(r"^Claim: (.*)$", text, re.MULTILINE).group(1).strip()
            reply = "SUPPORTED" if claim in text.split("<<<", 1)[-1].rsplit(">>>", 1)[0] else "NOT_SUPPORTED"
        elif text.rstrip().endswith("# Statements"):  # rlfh_extract: each sentence of >= 3 words, echoed, is one statement
            response = [b for label, b in find_material(text) if label == "response"][-1]
            found = [s for s in re.split(r"(?<=[.!?])\s+|\n+", response) if len(s.split()) >= 3]
            reply = "\n".join(f">> Sentence {n}: {s}\n* {s}" for n, s in enumerate(found, 1)) or "No statements"
        elif text.rstrip().endswith("# Verification"):  # rlfh_verify: Correct when the materials hold it
            statement = [b for label, b in find_material(text) if label == "statement"][-1].strip().rstrip(".")
            reply = "Correct" if statement in text.rsplit("# Materials", 1)[1].split("# Statement", 1)[0] else "Vague"
        elif text.rstrip().endswith("# Evaluation"):  # rlfh_assess
            reply = "3"
        elif "Answer to grade:" in text:
            gold = re.search(r"Gold answer: (.*)", text).group(1).lower()
            reply = "A" if re.search(r"Answer to grade: (.*)", text).group(1).strip().lower() in gold else "B"
        else:
            inner = text.split("<<<", 1)[-1].rsplit(">>>", 1)[0].strip()
            facts = [s for s in re.split(r"(?<=[.!?])\s+", inner) if len(s.split()) >= 3]
            reply = "\n".join(f"- {s}" for s in facts) or "NON_FACTUAL: no facts"
        self._send({"id": "b", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def _send(self, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _WithCleanup:
    """A reward callable plus what its column started (the local judge server)."""

    def __init__(self, reward: Any, *cleanups: Callable[[], Any]):
        self.reward, self.cleanups = reward, cleanups

    def __call__(self, **kwargs: Any) -> Any:
        return self.reward(**kwargs)

    def close(self) -> None:
        closer = getattr(self.reward, "close", None)  # the judge and store close through `cleanups`
        if callable(closer):
            closer()
        for fn in self.cleanups:
            fn()


def _unwrapped(text: str) -> str:
    """`text` without the material tags around model output (factrl.harness.services.judge.material)."""
    return re.sub(r'</?material-[0-9a-f]{12}(?: label="[^"]*")?>', "", text)


@column("knowrl")
def build_knowrl(bench: Bench):
    """KnowRL: the real judge client against the local latency judge (or --judge-url), the
    demo evidence store, the lexical NLI stand-in (the embedded default). All grades of a
    step go in one concurrent call, the fact splits in a second, the NLI pairs in one batch."""
    from factrl.harness.services.evidence import open_evidence
    from factrl.harness.services.judge import open_judge
    from factrl.harness.services.nli import load_nli
    from factrl.methods.knowrl import KnowRLReward, KnowRLSettings

    opts = bench.options
    server = None if opts.judge_url else LatencyJudge(opts.judge_latency)
    url, model = (opts.judge_url, opts.judge_model) if server is None else (server.url, "bench-judge")
    cfg = bench.compose("method=knowrl")
    judge = open_judge({"backend": "openai", "base_url": url, "model": model, "api_key_env": None, "cache": None,
                        "concurrency": opts.judge_concurrency, "max_tokens": 512, "max_failed_share": 1.0})
    store = open_evidence(cfg.evidence)
    reward = KnowRLReward(judge=judge, store=store, nli=load_nli({"backend": "standin"}),
                          settings=KnowRLSettings.from_mapping(cfg.method), k=int(cfg.evidence.k))
    where = f"local judge, {opts.judge_latency:g} s per request" if server else f"judge {url}"
    bench.notes["knowrl"] = f"{where}, concurrency {opts.judge_concurrency}, demo evidence store, lexical NLI stand-in"
    return _WithCleanup(reward, judge.close, store.close, *([server.shutdown, server.server_close] if server else []))


@column("forag")
def build_forag(bench: Bench):
    """FoRAG: the real judge client against the local latency judge (or --judge-url), the demo
    evidence store; all sentence splits of a step in one concurrent call, all verdicts in a second."""
    from factrl.harness.services.evidence import open_evidence
    from factrl.harness.services.judge import open_judge
    from factrl.methods.forag import FoRAGReward, FoRAGSettings

    opts = bench.options
    server = None if opts.judge_url else LatencyJudge(opts.judge_latency)
    url, model = (opts.judge_url, opts.judge_model) if server is None else (server.url, "bench-judge")
    cfg = bench.compose("method=forag")
    judge = open_judge({"backend": "openai", "base_url": url, "model": model, "api_key_env": None, "cache": None,
                        "concurrency": opts.judge_concurrency, "max_tokens": 512, "max_failed_share": 1.0})
    store = open_evidence(cfg.evidence)
    reward = FoRAGReward(tokenizer=bench.tokenizer, judge=judge, store=store,
                         settings=FoRAGSettings.from_mapping(cfg.method), k=int(cfg.evidence.k))
    where = f"local judge, {opts.judge_latency:g} s per request" if server else f"judge {url}"
    bench.notes["forag"] = f"{where}, concurrency {opts.judge_concurrency}, demo evidence store"
    return _WithCleanup(reward, judge.close, store.close, *([server.shutdown, server.server_close] if server else []))


def _reference_column(name: str):
    """`<name>-reference`: the method's reward built as training builds it (RunContext,
    method.build_reward) with judge=reference, the embedded models' default judge (the prompts'
    reference answers in-process: heuristic claims, the lexical NLI stand-in), the demo store."""
    def build(bench: Bench):
        from factrl.harness.core.method import RunContext
        from factrl.harness.core.registry import get_method

        cfg = bench.compose(f"method={name}", "judge=reference")
        ctx = RunContext(config=cfg, tokenizer=bench.tokenizer, pool=[], run_dir=None)
        reward = ctx.build_reward(get_method(name)(cfg.method))
        bench.notes[f"{name}-reference"] = "judge=reference (rule-based), demo evidence store"
        return _WithCleanup(reward, ctx.close)

    column(f"{name}-reference")(build)


for _name in ("knowrl", "rlfh", "forag"):
    _reference_column(_name)


@column("rlfh")
def build_rlfh(bench: Bench):
    """RLFH: the real judge client against the local latency judge (or --judge-url), the demo
    evidence store; per step one concurrent call with every extraction, then one with every
    verdict and one with every informativeness score (1 + 2F requests per completion)."""
    from factrl.harness.services.evidence import open_evidence
    from factrl.harness.services.judge import open_judge
    from factrl.harness.core.prompts import response_prefix
    from factrl.methods.rlfh import RLFHReward, RLFHSettings

    opts = bench.options
    server = None if opts.judge_url else LatencyJudge(opts.judge_latency)
    url, model = (opts.judge_url, opts.judge_model) if server is None else (server.url, "bench-judge")
    cfg = bench.compose("method=rlfh")
    judge = open_judge({"backend": "openai", "base_url": url, "model": model, "api_key_env": None, "cache": None,
                        "concurrency": opts.judge_concurrency, "max_tokens": 512, "max_failed_share": 1.0})
    store = open_evidence(cfg.evidence)
    reward = RLFHReward(tokenizer=bench.tokenizer, judge=judge, store=store,
                        settings=RLFHSettings.from_mapping(cfg.method),
                        prefix=response_prefix(cfg.model))
    where = f"local judge, {opts.judge_latency:g} s per request" if server else f"judge {url}"
    bench.notes["rlfh"] = f"{where}, concurrency {opts.judge_concurrency}, demo evidence store"
    return _WithCleanup(reward, judge.close, store.close, *([server.shutdown, server.server_close] if server else []))


def synthetic_batches(rows: list[dict], store: Any, questions: int, completions: int, count: int, prefix: str = ""):
    """`count` batches of questions x completions (prompt, completion text, row), each batch
    from different rows; reasoning sentences come from the row's evidence articles. A model whose
    prompt ends with its response prefix (SmolLM2's "<think>") writes on after it, as in training."""
    from factrl.harness.core.completions import split_sentences

    batches = []
    for n in range(count):
        batch = []
        for row in rows[n * questions:(n + 1) * questions]:
            text = store.by_title(row["title"], k=1)[0].text
            facts = [text[a:b] for a, b in split_sentences(text)][:3] or [text[:200]]
            for g in range(completions):
                kind = g % 4
                reasoning = " ".join(facts + ([FALSE_SENTENCE] if kind == 2 else []))
                answer = row["answers"][0] if kind != 1 else "Atlantis"
                body = (f"<think>{reasoning}</think><answer>{answer}</answer>" if kind != 3
                        else f"{reasoning} {answer}")  # kind 3: a format failure
                batch.append((row["question"], body[len(prefix):] if prefix and body.startswith(prefix) else body, row))
        batches.append(batch)
    return batches


def main() -> None:
    import torch

    from factrl.harness.services import models
    from factrl.harness.services.evidence import open_evidence
    from factrl.harness.pool import load_pool

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="policy tokenizer (alignment) of every column")
    parser.add_argument("--questions", type=int, default=3, help="Q (docs/PROTOCOL.md §4: 3)")
    parser.add_argument("--completions", type=int, default=16, help="G (docs/PROTOCOL.md §4: 16)")
    parser.add_argument("--steps", type=int, default=3, help="measured batches (after one warm-up batch)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall seconds or CPU seconds")
    parser.add_argument("--columns", default=",".join(COLUMNS), help="comma-separated; the first is not special")
    parser.add_argument("--nli-model", default=None, help="a local HHEM-2.1-Open copy: adds column fspo-hhem")
    parser.add_argument("--nli-foundation", default=None, help="local flan-t5-base config + tokenizer for it")
    parser.add_argument("--judge-latency", type=float, default=0.2,
                        help="knowrl, forag, rlfh: seconds per local judge request")
    parser.add_argument("--judge-url", default=None, help="knowrl, forag, rlfh: a real OpenAI-compatible judge instead")
    parser.add_argument("--judge-model", default=None, help="knowrl, forag, rlfh: the model id --judge-url serves")
    parser.add_argument("--judge-concurrency", type=int, default=16, help="knowrl, forag, rlfh: judge requests in flight")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    names = [n.strip() for n in args.columns.split(",") if n.strip()]
    builders = {**COLUMNS, **({"fspo-hhem": build_fspo_hhem} if args.nli_model else {})}
    if args.nli_model and "fspo-hhem" not in names:
        names.append("fspo-hhem")
    unknown = [n for n in names if n not in builders]
    if unknown:
        parser.error(f"unknown column(s) {', '.join(unknown)}; known: {', '.join(builders)}")

    with tempfile.TemporaryDirectory() as tmp:
        cfg = _compose(args.model)
        identity = models.resolve(cfg.model)
        tokenizer = models.load_tokenizer(identity, cfg.model)
        bench = Bench(args.model, tokenizer, Path(tmp), args)
        with open_evidence(cfg.evidence) as store:
            # Rows the demo store has articles for: the paper's store holds every row's pages.
            rows = [r for r in load_pool(cfg.pool) if r.get("title") and store.by_title(r["title"], k=1)]
            from factrl.harness.core.prompts import response_prefix

            batches = synthetic_batches(rows, store, args.questions, args.completions, args.steps + 1,
                                        prefix=response_prefix(cfg.model) or "")
        encoded = [[tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
                    for _, text, _ in batch] for batch in batches]
        times: dict[str, list[float]] = {}
        sentences: dict[str, float] = {}
        # cpu: this process's CPU seconds (every thread), steadier than wall time on a shared machine;
        # only for columns whose work is all in-process (not a judge server's latency).
        clock = time.process_time if args.clock == "cpu" else time.perf_counter
        for name in names:
            reward = builders[name](bench)
            times[name], scored = [], []
            for batch, ids in zip(batches, encoded):
                started = clock()
                out = reward(prompts=[p for p, _, _ in batch], completions=[t for _, t, _ in batch],
                             completion_ids=ids, rows=[r for _, _, r in batch])
                times[name].append(clock() - started)
                scored.append(float(out.diagnostics.get("sentences", float("nan"))))
            sentences[name] = statistics.mean(scored[1:])
            if hasattr(reward, "close"):
                reward.close()
    _report(args, names, times, sentences, bench.notes)


def _compose(model: str):
    from factrl.harness.engine.config import compose

    return compose([f"model={model}", "method=fspo"])


def _report(args, names: list[str], times: dict[str, list[float]], sentences: dict[str, float],
            notes: dict[str, str]) -> None:
    print(f"tokenizer {args.model}, {args.questions} questions x {args.completions} completions per step, "
          f"{args.steps} measured steps (+1 warm-up), OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    base = statistics.mean(times[BASELINE][1:]) if BASELINE in times else None
    print(f"{'column':<16} {'mean s/step':>12} {'median':>10} {'x ' + BASELINE:>10} {'sentences':>10}  what")
    for name in names:
        measured = times[name][1:]
        mean = statistics.mean(measured)
        ratio = f"{mean / base:10.2f}" if base else f"{'-':>10}"
        print(f"{name:<16} {mean:12.4f} {statistics.median(measured):10.4f} {ratio} {sentences[name]:10.1f}  "
              f"{notes.get(name, '')}")
    print("paper, complete training time per run (docs/PROTOCOL.md §7): FSPO 5.52x, FoRAG 7.76x, KnowRL 8.77x CorVer")


if __name__ == "__main__":
    main()
