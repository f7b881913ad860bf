"""CorVer GRPO steps on a paper-shaped model with random weights: per-phase times, tokens/s, peak memory.

    python benchmarks/gpu_step.py [--shape paper|tiny] [--steps 2] [--out gpu_step.txt]
                                  [--model llama-3.2-3b] [--rollout auto|hf|vllm]
                                  [--max-completion-length N] [--model-path DIR] [--index-dir DIR]

Comparing with the CorVer paper's Table 2 (1:49 h for 100 steps of Llama-3.2-3B on one H100,
about 65 s a step) needs what the defaults leave out: real completion lengths (random weights
almost never emit EOS, so every completion runs to the limit; `--max-completion-length` emulates a
real mean, or `--model-path` gives real weights), the real corpus (`--index-dir` with
`--corpus-tokenizer`; the default is a fixture index of a few documents, so the reward's cost is
a lower bound), and the GPU (an H200 decodes about 1.4x faster than an H100). The report ends with
`100 steps ~ h:mm` from the last measured step, beside the tokens per step it had.

Needs no network: the model is `model.source=random` (the real class and shape from
configs/model/<model>.yaml's `architecture:`, random weights, the tiny-llama Llama-2 tokenizer;
ids < its 32,000 fit every paper vocabulary) and the corpus is a small infini-gram index built
here from the CorVer test fixtures (tests/corver/fact_index.py) with the same tokenizer.

`--shape paper`: bf16 weights on CUDA, LoRA r 128 (configs/lora/default.yaml), the paper's batch
(docs/PROTOCOL.md §4: 3 questions x 16 completions for Llama-3.2-3B, 1,000-token limit), the model's
protocol micro-batch and checkpointing, heuristic extractor. `--shape tiny`: the same code on
a 2-layer model of the same class on the CPU (2 x 2 completions, 8 tokens), for the test suite.
Rollouts use vLLM (colocate) when it is installed and CUDA is present, HF generate otherwise
(`--rollout` forces one); for vLLM the random weights are saved once to a temporary directory,
since vLLM loads a model from disk.

Each variant trains `--steps` steps through the harness's own engine pieces (engine.build_dataset,
grpo_args, lora_config, TokenGRPOTrainer, CorVer's build_reward) timed by harness.core.timer:
1. CorVer (corpus reward on), 2. the same with `method.lambda_c=0` (response-level reward only,
ablation A1), so the ratio is CorVer's cost over plain response-level GRPO. The first step of
each is a warm-up (CUDA kernels, allocator); the last step is the one compared. Each variant
runs in a process of its own (`--variant`), so neither sees the other's allocator, vLLM engine
or CUDA state. Peak memory on CUDA: torch.cuda.max_memory_allocated and max_memory_reserved,
and the device's own peak (total - free from torch.cuda.mem_get_info, sampled every 50 ms, which
counts the CUDA context, cuBLAS workspaces and vLLM's own pool); the plan is compared with the
device peak. On the CPU: the process's peak RSS. Everything printed also goes to `--out`
(flushed line by line, so a killed run keeps its part).

Generation speed: the trainer logs each HF `generate` (seconds, rows, padded prompt width, decode
steps); the report prints the last step's generated tokens/s, the fast-path settings as they
resolved (train.rollout: merged LoRA, static cache, compiled decoding), and beside it the
memory-bandwidth bound of that shape (harness/services/models/decode_speed.py: weights + KV cache bytes per
decode step over the device's HBM bandwidth, 4.8 TB/s on an H200; `--hbm-tbps` for a device not
listed) and the target, 5 x the stock path's 973 tokens/s. `--variants corver` runs CorVer alone
(the GPU check); `--set KEY=VALUE` passes overrides (the stock path: `--set
train.rollout.merge_lora=false --set train.rollout.static_cache=false`). When the limit is not
the protocol's 1,000 tokens, a second `100 steps ~` line projects the step to it (`project_step`).
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parent.parent
PHASES = ("rollout", "reward", "update", "save")
# The tiny vocabulary is larger than the 32,000-token tokenizer's, as the paper shape's 128,256 is:
# a random policy samples ids the tokenizer lacks (about 1 in 5 here) and the reward must cope
# (decoding skips them). The real 128,256 would make the CPU step ~7x slower.
TINY_SHRINK = ("{num_hidden_layers:2,hidden_size:64,intermediate_size:128,num_attention_heads:4,"
               "num_key_value_heads:2,head_dim:16,vocab_size:40000}")


class Report:
    """print() that also appends each line to the output file at once."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def build_fixture_index(root: Path, tokenizer) -> Path:
    """The CorVer tests' small index (fact documents between long fillers), Llama-2 tokenizer."""
    sys.path.insert(0, str(REPO))
    from tests.corver.fact_index import build_fact_index

    return build_fact_index(root, tokenizer)


def overrides(args: argparse.Namespace, index_dir: Path, use_vllm: bool) -> list[str]:
    weights = ([f"model.path={args.model_path}"] if getattr(args, "model_path", None)
               else ["model.source=random", "model.tokenizer_from=tiny-llama"])
    common = [f"model={args.model}", *weights, "method=corver",
              "method.extractor.backend=heuristic", f"train.steps={args.steps}", "train.save_steps=100000",
              f"corpus.index_dir={index_dir}", f"corpus.tokenizer={getattr(args, 'corpus_tokenizer', 'tiny-llama')}",
              "corpus.cache=false", f"train.use_vllm={str(use_vllm).lower()}"]
    if getattr(args, "max_completion_length", None):
        common.append(f"train.max_completion_length={int(args.max_completion_length)}")
    common += list(getattr(args, "set", None) or [])  # --set KEY=VALUE: e.g. train.rollout.compile=false
    if args.shape == "tiny":
        length = int(getattr(args, "max_completion_length", None) or 8)
        return common + ["model.dtype=float32", f"+model.shrink={TINY_SHRINK}", "train.questions_per_step=2",
                         "train.completions_per_question=2", f"train.max_completion_length={length}",
                         "train.max_prompt_length=256", "train.micro_batch_size=null",
                         "train.gradient_checkpointing=false", "lora.r=4", "lora.alpha=8"]
    return common + ["model.dtype=bfloat16"]  # batch, limits, LoRA and memory settings: the protocol's


def _peak_reset() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


class DevicePeak:
    """The device's peak use (total - free, torch.cuda.mem_get_info), sampled in a thread: it counts
    what the caching allocator's statistics leave out (CUDA context, cuBLAS and NCCL workspaces,
    vLLM's own memory pool)."""

    def __init__(self, every_s: float = 0.05):
        import threading

        self.peak, self.every_s = 0, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import torch

        while not self._stop.is_set():
            free, total = torch.cuda.mem_get_info()
            self.peak = max(self.peak, int(total - free))
            self._stop.wait(self.every_s)

    def __enter__(self) -> "DevicePeak":
        import torch

        if torch.cuda.is_available():
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


def _peaks(device: DevicePeak) -> dict[str, int]:
    """Peak bytes by measure (CUDA: allocated, reserved, the device's; CPU: the process's RSS)."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        return {"cuda max_memory_allocated": int(torch.cuda.max_memory_allocated()),
                "cuda max_memory_reserved": int(torch.cuda.max_memory_reserved()),
                "device peak (mem_get_info)": int(device.peak)}
    return {"cpu peak RSS of the process": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024}


def materialise(cfg, root: Path) -> Path:
    """Save the random model (and tokenizer) once, for vLLM, which loads weights from disk."""
    from factrl.harness.services import models

    identity = models.resolve(cfg.model)
    model = models.load_model(identity, cfg.model)  # built on the GPU: seconds, where a CPU init takes a minute
    target = root / "random-model"
    model.save_pretrained(target)
    models.load_tokenizer(identity, cfg.model).save_pretrained(target)
    del model
    gc.collect()
    _peak_reset()
    return target


def run_variant(cfg, name: str, out_dir: Path, tokenizer) -> dict:
    """Train cfg.train.steps steps; per-step phase seconds, tokens and the peak memory.
    `tokenizer`: the policy's (tiny-llama's Llama-2 one), loaded once for both variants."""
    import torch
    from transformers import TrainerCallback

    from factrl.harness.services import models
    from factrl.harness.core.method import RunContext
    from factrl.harness.pool import load_pool
    from factrl.harness.core.registry import get_method
    from factrl.harness.core.timer import Timer
    from factrl.harness.training.engine import build_dataset
    from factrl.harness.training.args import grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer
    from factrl.harness.training.settings import LogprobSettings, RolloutSettings

    timer = Timer(autosave_s=None)

    class StepClock(TrainerCallback):
        """Per optimizer step: wall seconds and the timer's phase seconds spent in it."""

        def __init__(self):
            self.steps: list[dict] = []
            self._start, self._phases = 0.0, {}

        @staticmethod
        def _snapshot() -> dict[str, float]:
            return {k: float(v["seconds"]) for k, v in timer.to_dict()["phases"].items()}

        def on_step_begin(self, a, state, control, **kw):
            self._start, self._phases = time.perf_counter(), self._snapshot()
            self._generated = len(self.trainer.generation_log)

        def on_step_end(self, a, state, control, **kw):
            now = self._snapshot()
            calls = self.trainer.generation_log[self._generated:]  # (seconds, rows, prompt width, longest)
            self.steps.append({"seconds": time.perf_counter() - self._start,
                               **{k: now.get(k, 0.0) - self._phases.get(k, 0.0) for k in PHASES},
                               "generate": sum(c[0] for c in calls), "rows": sum(c[1] for c in calls),
                               "prompt_width": max((c[2] for c in calls), default=0),
                               "decode_steps": max((c[3] for c in calls), default=0)})

    _peak_reset()
    with timer.phase("init"):
        identity = models.resolve(cfg.model)
        rows = load_pool(cfg.pool, cfg.eval)
        dataset = build_dataset(rows, cfg.model, tokenizer=tokenizer)
        model = models.load_model(identity, cfg.model)
        method = get_method("corver")(cfg.method)
        ctx = RunContext(config=cfg, tokenizer=tokenizer, pool=rows, run_dir=out_dir)
        reward = ctx.build_reward(method)
        clock = StepClock()
        trainer = TokenGRPOTrainer(model=model, args=grpo_args(cfg, out_dir / name), train_dataset=dataset,
                                   processing_class=tokenizer, peft_config=lora_config(cfg.lora),
                                   rollout=RolloutSettings.from_mapping(cfg.train.rollout),
                                   logprob=LogprobSettings.from_mapping(cfg.train.logprob),
                                   method_reward=reward, reward_name=method.name, method=method, timer=timer,
                                   callbacks=[clock])
        clock.trainer = trainer
    init_s = float(timer.to_dict()["phases"]["init"]["seconds"])
    try:
        with DevicePeak() as device, timer.phase("update"):
            trainer.train()
        peaks = _peaks(device)
    finally:
        ctx.close(raise_errors=False)
    trainer_resolved = trainer._rollout.resolved(trainer.accelerator.device.type)
    if trainer.compile_failed:  # the rollouts fell back to eager decoding (grpo.py)
        trainer_resolved["compile"] = f"failed, eager ({trainer.compile_failed})"
    lengths = [e["completions/mean_length"] for e in trainer.state.log_history if "completions/mean_length" in e]
    batch = int(cfg.train.questions_per_step) * int(cfg.train.completions_per_question)
    for step, mean_len in zip(clock.steps, lengths):
        step["completion_tokens"] = mean_len * batch
    del trainer, model
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return {"name": name, "init_s": init_s, "steps": clock.steps, "peaks": peaks,
            "peak_bytes": max(peaks.values()), "fast_path": trainer_resolved}


def _step_line(i: int, step: dict) -> str:
    tokens = step.get("completion_tokens", 0.0)
    generation = step["rollout"] + step["reward"]
    rate = tokens / step["rollout"] if step["rollout"] > 0 else 0.0
    return (f"  step {i}: {step['seconds']:.2f} s = rollout {step['rollout']:.2f} (generation + log-probs) + "
            f"reward {step['reward']:.3f} + update {step['update']:.2f} + save {step['save']:.2f}; "
            f"{tokens:.0f} completion tokens, {rate:.0f} tok/s in rollout, "
            f"{tokens / step['seconds'] if step['seconds'] else 0:.0f} tok/s per step; rollout+reward {generation:.2f} s")


VARIANTS = {"corver": [], "response-only": ["method.lambda_c=0"]}
PROTOCOL_TOKENS = 1000  # docs/PROTOCOL.md §4: the rollout limit of every paper model
STOCK_TOKENS_PER_S = 973  # the stock HF path on one H200 at the paper shape (docs/GPU_CHECK.md); target 5x


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("paper", "tiny"), default="paper")
    parser.add_argument("--steps", type=int, default=2, help="steps per variant; the first is a warm-up")
    parser.add_argument("--out", type=Path, default=Path("gpu_step.txt"))
    parser.add_argument("--model", default="llama-3.2-3b")
    parser.add_argument("--rollout", choices=("auto", "hf", "vllm"), default="auto")
    parser.add_argument("--max-completion-length", type=int, default=None,
                        help="rollout token limit (default: the protocol's 1,000; a real mean length emulates real "
                             "completions, which random weights never end early)")
    parser.add_argument("--model-path", type=Path, default=None, help="real weights (a local HF folder) instead of "
                        "random ones of the --model shape")
    parser.add_argument("--index-dir", type=Path, default=None, help="a real infini-gram index instead of the "
                        "fixture index (with --corpus-tokenizer)")
    parser.add_argument("--corpus-tokenizer", default="tiny-llama", help="the index's tokenizer (corpus.tokenizer)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for both variants, e.g. train.rollout.static_cache=false (repeatable)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="which variants to run, comma-separated (default: both; the GPU check runs corver)")
    parser.add_argument("--hbm-tbps", type=float, default=None, help="the device's memory bandwidth in TB/s for "
                        "the decode bound (default: harness.services.models.decode_speed.HBM_TBPS by device name)")
    parser.add_argument("--variant", choices=tuple(VARIANTS), help=argparse.SUPPRESS)  # one variant, in this process
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    return parser


def _variant(args: argparse.Namespace) -> int:
    """A child process: one variant, its result as JSON in --result."""
    import json

    import torch

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose

    if not torch.cuda.is_available():
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    cfg = compose(overrides(args, args.index_dir, args.rollout == "vllm") + VARIANTS[args.variant])
    tokenizer = models.load_tokenizer(models.resolve(cfg.model), cfg.model)
    result = run_variant(cfg, args.variant, args.result.parent / "train", tokenizer)
    args.result.write_text(json.dumps(result), encoding="utf-8")
    return 0


def _run_in_process_of_its_own(name: str, args: argparse.Namespace, root: Path, index_dir: Path,
                               model_path: Path | None, rollout: str) -> dict:
    import json
    import subprocess

    result = root / f"{name}.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--variant", name, "--result", str(result),
               "--shape", args.shape, "--steps", str(args.steps), "--model", args.model, "--rollout", rollout,
               "--index-dir", str(index_dir), "--corpus-tokenizer", args.corpus_tokenizer, "--out",
               str(root / f"{name}.txt")]
    command += ["--model-path", str(model_path)] if model_path else []
    command += ["--max-completion-length", str(args.max_completion_length)] if args.max_completion_length else []
    command += [f"--set={item}" for item in args.set]
    done = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})
    if done.returncode != 0 or not result.is_file():
        raise RuntimeError(f"variant {name} failed (exit {done.returncode})")
    return json.loads(result.read_text(encoding="utf-8"))


def _speed_lines(report, arch: dict, cfg, result: dict, device: str, hbm_tbps: float | None) -> None:
    """Generated tokens/s of the last step beside the memory-bandwidth bound of its shape."""
    from factrl.harness.services.models.decode_speed import bandwidth_tbps, decode_bound
    from factrl.harness.training.memory_plan import DTYPE_BYTES

    step, resolved = result["steps"][-1], result.get("fast_path") or {}
    if not step.get("generate"):
        return
    rows, width, decoded = step["rows"], step["prompt_width"], step["decode_steps"]
    rate = rows * decoded / step["generate"]
    report(f"generation: {rows} rows x {decoded} decode steps in {step['generate']:.2f} s = {rate:.0f} generated "
           f"tokens/s (fast path: " + ", ".join(f"{k} {v}" for k, v in resolved.items() if k != "device") + ")")
    tbps = hbm_tbps or bandwidth_tbps(device)
    if tbps is None:
        report(f"decode bound: {device!r} is not in HBM_TBPS; give --hbm-tbps")
        return
    bound = decode_bound(arch, rows=rows, prompt_len=width, new_tokens=decoded, bandwidth_tbps=tbps,
                         dtype_bytes=DTYPE_BYTES.get(cfg.model.get("dtype"), 2),
                         static_cache=bool(resolved.get("static_cache")))
    report(f"decode bound at {tbps} TB/s: {bound['tokens_per_s']:.0f} tokens/s (weights {bound['weight_bytes'] / 1e9:.2f}"
           f" GB + KV {bound['kv_bytes'] / 1e9:.2f} GB read per decode step); measured {rate / bound['tokens_per_s']:.1%}"
           f" of it; target {5 * STOCK_TOKENS_PER_S:,} tokens/s (5 x the stock HF path's {STOCK_TOKENS_PER_S} on an H200"
           f" at the paper shape): {'met' if rate >= 5 * STOCK_TOKENS_PER_S else 'not met'}")


def _hm(seconds: float) -> str:
    minutes = int(round(seconds / 60))
    return f"{minutes // 60}:{minutes % 60:02d}"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.variant:
        return _variant(args)
    started = time.perf_counter()
    report = Report(args.out)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    if not names or any(n not in VARIANTS for n in names):
        report(f"gpu_step: --variants {args.variants!r}: use one or more of {', '.join(VARIANTS)}")
        return 2

    import importlib.util

    import torch
    import transformers
    import trl

    from factrl.harness.services import models
    from factrl.harness.engine.config import compose
    from factrl.harness.core.errors import HarnessError
    from factrl.harness.engine.run.gpus import check_one_process
    from factrl.harness.training.memory_plan import GB, plan_for_config
    from factrl.harness.services.models.shapes import architecture, parameter_count

    try:
        check_one_process("gpu_step.py")  # several visible GPUs: TRL refuses nn.DataParallel at init
    except HarnessError as err:
        report(f"gpu_step: {err}")
        return 2
    cuda = torch.cuda.is_available()
    if args.shape == "paper" and not cuda:
        report("gpu_step: --shape paper needs a CUDA GPU (bf16 3B model); use --shape tiny on a CPU")
        return 2
    has_vllm = importlib.util.find_spec("vllm") is not None
    use_vllm = {"auto": cuda and has_vllm, "hf": False, "vllm": True}[args.rollout]
    if use_vllm and not (cuda and has_vllm):
        report("gpu_step: --rollout vllm needs CUDA and the vllm package (pip install -e '.[gpu]')")
        return 2
    device = torch.cuda.get_device_name(0) if cuda else platform.processor() or "cpu"
    report(f"gpu_step: shape={args.shape} model={args.model} steps={args.steps} rollout={'vllm' if use_vllm else 'hf'} "
           f"device={device} torch={torch.__version__} transformers={transformers.__version__} trl={trl.__version__}")
    with tempfile.TemporaryDirectory(prefix="gpu-step-") as tmp:
        root = Path(tmp)
        index_dir = args.index_dir
        if index_dir is None:
            tok_cfg = compose(["model=tiny-llama"]).model
            index_dir = build_fixture_index(root, models.load_tokenizer(models.resolve(tok_cfg), tok_cfg))
        cfg = compose(overrides(args, index_dir, use_vllm))
        model_path = args.model_path
        if use_vllm and model_path is None:
            model_path = materialise(cfg, root)  # vLLM loads weights from disk
            cfg = compose(overrides(argparse.Namespace(**{**vars(args), "model_path": model_path}), index_dir,
                                    use_vllm))
        arch = architecture(cfg.model, cfg.model.get("shrink"))
        train = cfg.train
        weights = f"weights from {args.model_path}" if args.model_path else "random weights"
        report(f"model: {arch['model_type']} {parameter_count(arch) / 1e9:.3f}B parameters ({weights}, "
               f"{cfg.model.dtype}); batch {train.questions_per_step} x {train.completions_per_question}, limit "
               f"{train.max_completion_length} tokens, micro-batch {train.get('micro_batch_size') or 'all'}, "
               f"gradient checkpointing {train.gradient_checkpointing}, LoRA r {cfg.lora.r}, extractor "
               f"{cfg.method.extractor.backend}, corpus {index_dir}" + ("" if args.index_dir else " (fixture)"))
        plan = plan_for_config(cfg) if args.shape == "paper" else None
        for line in (plan.lines() if plan else []):
            report(f"  plan: {line}")
        results = []
        for name in names:
            report(f"{name} (a process of its own):")
            result = _run_in_process_of_its_own(name, args, root, index_dir, model_path,
                                                "vllm" if use_vllm else "hf")
            results.append(result)
            peaks = ", ".join(f"{value / GB:.2f} GB {measure}" for measure, value in result["peaks"].items())
            report(f"  init {result['init_s']:.1f} s; peak memory {peaks}")
            for i, step in enumerate(result["steps"], 1):
                report(_step_line(i, step))
    corver = results[0]["steps"][-1]
    if len(results) > 1:
        plain = results[1]["steps"][-1]
        report(f"CorVer / response-only, last step: step time {corver['seconds'] / plain['seconds']:.3f}, "
               f"reward {corver['reward']:.3f} s vs {plain['reward']:.3f} s "
               f"({100 * corver['reward'] / corver['seconds']:.2f}% of CorVer's step), peak memory "
               f"{results[0]['peak_bytes'] / max(results[1]['peak_bytes'], 1):.3f}")
    _speed_lines(report, arch, cfg, results[0], device, args.hbm_tbps)
    tokens = corver.get("completion_tokens", 0.0)
    batch = int(train.questions_per_step) * int(train.completions_per_question)
    limit = int(train.max_completion_length)
    measured_line = (f"{_hm(100 * corver['seconds'] + results[0]['init_s'])} (CorVer's last step "
                     f"{corver['seconds']:.1f} s x 100 + init {results[0]['init_s']:.0f} s); tokens per step "
                     f"{tokens:.0f} (mean completion {tokens / max(batch, 1):.0f} of the {limit}-token limit). "
                     f"The paper's Table 2: 1:49 for 100 steps on one H100"
                     + ("" if args.model_path else "; random weights run every completion to the limit"))
    if limit == PROTOCOL_TOKENS:
        report(f"100 steps ~ {measured_line}")
    else:  # the GPU check measures a shorter limit: the protocol's figure is projected from it
        from factrl.harness.services.models.decode_speed import project_step

        projected = project_step(corver, measured_tokens=max(corver.get("decode_steps") or limit, 1),
                                 target_tokens=PROTOCOL_TOKENS, prompt_len=corver.get("prompt_width", 0))
        report(f"100 steps at the {limit}-token limit ~ {measured_line}")
        report(f"100 steps ~ {_hm(100 * projected + results[0]['init_s'])} at the protocol's {PROTOCOL_TOKENS:,}-token "
               f"limit (projected from the {limit}-token step: {projected:.1f} s a step; generation x "
               f"{PROTOCOL_TOKENS}/{limit} per decode step, log-probs and update x the sequence ratio; "
               f"harness/services/models/decode_speed.py project_step)")
    if plan is not None:
        measured = {k: max(r["peaks"].get(k, 0) for r in results) for k in results[0]["peaks"]}
        report(f"planned peak {plan.total / GB:.1f} GB (an estimate) vs measured: "
               + ", ".join(f"{v / GB:.1f} GB {k}" for k, v in measured.items()))
    report(f"gpu_step: done in {time.perf_counter() - started:.1f} s; full output in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
