"""CorVer GRPO steps on a paper-shaped model with random weights: per-phase times, tokens/s, peak memory.

    python benchmarks/gpu_step.py [--shape paper|tiny] [--steps 2] [--out gpu_step.txt]
                                  [--model llama-3.2-3b] [--rollout auto|hf|vllm]

Needs no network: the model is `model.source=random` (the real class and shape from
configs/model/<model>.yaml's `architecture:`, random weights, the tiny-llama Llama-2 tokenizer;
ids < its 32,000 fit every paper vocabulary) and the corpus is a small infini-gram index built
here from the CorVer test fixtures (tests/corver/fact_index.py) with the same tokenizer.

`--shape paper`: bf16 weights on CUDA, LoRA r 128 (configs/lora/default.yaml), the paper's batch
(PROTOCOL 4: 3 questions x 16 completions for Llama-3.2-3B, 1,000-token limit), the model's
protocol micro-batch and checkpointing, heuristic extractor. `--shape tiny`: the same code on
a 2-layer model of the same class on the CPU (2 x 2 completions, 8 tokens), for the test suite.
Rollouts use vLLM (colocate) when it is installed and CUDA is present, HF generate otherwise
(`--rollout` forces one); for vLLM the random weights are saved once to a temporary directory,
since vLLM loads a model from disk.

Each variant trains `--steps` steps through the harness's own engine pieces (engine.build_dataset,
grpo_args, lora_config, TokenGRPOTrainer, CorVer's build_reward) timed by harness.timer:
1. CorVer (corpus reward on), 2. the same with `method.lambda_c=0` (response-level reward only,
ablation A1), so the ratio is CorVer's cost over plain response-level GRPO. The first step of
each is a warm-up (CUDA kernels, allocator); the last step is the one compared. Peak memory:
torch.cuda.max_memory_allocated per variant on CUDA; on the CPU the process's peak RSS so far.
Everything printed also goes to `--out` (flushed line by line, so a killed run keeps its part).
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
    common = [f"model={args.model}", "model.source=random", "model.tokenizer_from=tiny-llama", "method=corver",
              "method.extractor.backend=heuristic", f"train.steps={args.steps}", "train.save_steps=100000",
              f"corpus.index_dir={index_dir}", "corpus.tokenizer=tiny-llama", "corpus.cache=false",
              f"train.use_vllm={str(use_vllm).lower()}"]
    if args.shape == "tiny":
        return common + ["model.dtype=float32", f"+model.shrink={TINY_SHRINK}", "train.questions_per_step=2",
                         "train.completions_per_question=2", "train.max_completion_length=8",
                         "train.max_prompt_length=256", "train.micro_batch_size=null",
                         "train.gradient_checkpointing=false", "lora.r=4", "lora.alpha=8"]
    return common + ["model.dtype=bfloat16"]  # batch, limits, LoRA and memory settings: the protocol's


def _peak_reset() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _peak() -> tuple[int, str]:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        return int(torch.cuda.max_memory_allocated()), "cuda max_memory_allocated"
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024, "cpu peak RSS of the process"


def materialise(cfg, root: Path) -> Path:
    """Save the random model (and tokenizer) once, for vLLM, which loads weights from disk."""
    from factrl.harness import models

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

    from factrl.harness import models
    from factrl.harness.method import RunContext
    from factrl.harness.pool import load_pool
    from factrl.harness.registry import get_method
    from factrl.harness.timer import Timer
    from factrl.harness.training.engine import build_dataset, grpo_args, lora_config
    from factrl.harness.training.grpo import TokenGRPOTrainer

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

        def on_step_end(self, a, state, control, **kw):
            now = self._snapshot()
            self.steps.append({"seconds": time.perf_counter() - self._start,
                               **{k: now.get(k, 0.0) - self._phases.get(k, 0.0) for k in PHASES}})

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
                                   method_reward=reward, reward_name=method.name, method=method, timer=timer,
                                   callbacks=[clock])
    init_s = float(timer.to_dict()["phases"]["init"]["seconds"])
    try:
        with timer.phase("update"):
            trainer.train()
        peak, measure = _peak()
    finally:
        ctx.close(raise_errors=False)
    lengths = [e["completions/mean_length"] for e in trainer.state.log_history if "completions/mean_length" in e]
    batch = int(cfg.train.questions_per_step) * int(cfg.train.completions_per_question)
    for step, mean_len in zip(clock.steps, lengths):
        step["completion_tokens"] = mean_len * batch
    del trainer, model
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return {"name": name, "init_s": init_s, "steps": clock.steps, "peak_bytes": peak, "measure": measure}


def _step_line(i: int, step: dict) -> str:
    tokens = step.get("completion_tokens", 0.0)
    generation = step["rollout"] + step["reward"]
    rate = tokens / step["rollout"] if step["rollout"] > 0 else 0.0
    return (f"  step {i}: {step['seconds']:.2f} s = rollout {step['rollout']:.2f} (generation + log-probs) + "
            f"reward {step['reward']:.3f} + update {step['update']:.2f} + save {step['save']:.2f}; "
            f"{tokens:.0f} completion tokens, {rate:.0f} tok/s in rollout, "
            f"{tokens / step['seconds'] if step['seconds'] else 0:.0f} tok/s per step; rollout+reward {generation:.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("paper", "tiny"), default="paper")
    parser.add_argument("--steps", type=int, default=2, help="steps per variant; the first is a warm-up")
    parser.add_argument("--out", type=Path, default=Path("gpu_step.txt"))
    parser.add_argument("--model", default="llama-3.2-3b")
    parser.add_argument("--rollout", choices=("auto", "hf", "vllm"), default="auto")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    report = Report(args.out)

    import importlib.util

    import torch
    import transformers
    import trl

    from factrl.harness import models
    from factrl.harness.config import compose
    from factrl.harness.memory_plan import GB, plan_for_config
    from factrl.harness.model_shapes import architecture, parameter_count

    cuda = torch.cuda.is_available()
    if args.shape == "paper" and not cuda:
        report("gpu_step: --shape paper needs a CUDA GPU (bf16 3B model); use --shape tiny on a CPU")
        return 2
    if not cuda:
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
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
        tok_cfg = compose(["model=tiny-llama"]).model
        tokenizer = models.load_tokenizer(models.resolve(tok_cfg), tok_cfg)
        index_dir = build_fixture_index(root, tokenizer)
        base = overrides(args, index_dir, use_vllm)
        cfg = compose(base)
        if use_vllm:
            base = base + [f"model.path={materialise(cfg, root)}"]
            cfg = compose(base)
        variants = (("corver", cfg), ("response-only", compose(base + ["method.lambda_c=0"])))
        arch = architecture(cfg.model, cfg.model.get("shrink"))
        train = cfg.train
        report(f"model: {arch['model_type']} {parameter_count(arch) / 1e9:.3f}B "
               f"parameters (random weights, {cfg.model.dtype}); batch {train.questions_per_step} x "
               f"{train.completions_per_question}, limit {train.max_completion_length} tokens, micro-batch "
               f"{train.get('micro_batch_size') or 'all'}, gradient checkpointing {train.gradient_checkpointing}, "
               f"LoRA r {cfg.lora.r}, extractor {cfg.method.extractor.backend}, corpus {index_dir.name} (fixture)")
        plan = plan_for_config(cfg) if args.shape == "paper" else None
        for line in (plan.lines() if plan else []):
            report(f"  plan: {line}")
        results = []
        for name, variant_cfg in variants:
            report(f"{name}:")
            result = run_variant(variant_cfg, name, root / "train", tokenizer)
            results.append(result)
            report(f"  init {result['init_s']:.1f} s; peak memory {result['peak_bytes'] / GB:.2f} GB "
                   f"({result['measure']})")
            for i, step in enumerate(result["steps"], 1):
                report(_step_line(i, step))
    corver, plain = (r["steps"][-1] for r in results)
    report(f"CorVer / response-only, last step: step time {corver['seconds'] / plain['seconds']:.3f}, "
           f"reward {corver['reward']:.3f} s vs {plain['reward']:.3f} s "
           f"({100 * corver['reward'] / corver['seconds']:.2f}% of CorVer's step), peak memory "
           f"{results[0]['peak_bytes'] / max(results[1]['peak_bytes'], 1):.3f}")
    if plan is not None:
        report(f"planned peak {plan.total / GB:.1f} GB vs measured {max(r['peak_bytes'] for r in results) / GB:.1f} GB")
    report(f"gpu_step: done in {time.perf_counter() - started:.1f} s; full output in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
