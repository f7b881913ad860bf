"""Every trained cell of the paper grid composes to the settings the originals used.

Two tables, transcribed here from their sources (never from our configs):
- PAPER: the CorVer paper's per-(method, model) settings (arXiv 2605.29648 v2: Table 6 for Q and
  C, Table 7 for LR and KL, A.1.3 and D.3 for the rollout sampling), checked for every cell of
  configs/grid/paper.yaml.
- ENGINE: each method's released training engine (optimizer, LR schedule, warmup, betas, weight
  decay, loss aggregation, advantage eps and std floor), cited upstream file:line@commit, checked
  for every main-table cell and shown by `harness run --cfg job`.
"""
from __future__ import annotations

import pytest
import yaml

from factrl.harness.engine.config import compose
from factrl.harness.engine.grid import load_grid
from tests.helpers import harness

MAIN_MODELS = ("llama-3.2-3b", "llama-3.1-8b", "qwen3-4b", "qwen3-8b")


def paper(method: str, model: str, experiment: str | None) -> dict:
    """The CorVer paper's value of each setting for one cell (sources inline)."""
    q = 4 if model == "qwen3-4b" else 3  # Table 6: Q = 4 on Qwen3-4B, 3 on every other model
    c = 16  # Table 6: C = 16 for every 100-step row
    sampling = {"top_p": 1.0, "top_k": 0, "presence_penalty": 0.0}  # none stated: no filtering, no penalty
    if method == "corver":
        # Table 7 caption: "CorVer uses KL 0.01 for Qwen3-4B, 0.003 for Llama-3.1-8B, and 0.001 otherwise";
        # LR 1e-5 (Table 7); A.1.3: "using rollout temperature 1.0".
        beta = {"qwen3-4b": 0.01, "llama-3.1-8b": 0.003}.get(model, 0.001)
        return {"lr": 1e-5, "beta": beta, "T": 1.0, "Q": q, "C": c, **sampling}
    if method == "fspo":
        # Table 7: 2e-6 / 0.04; A.1.3: "FSPO uses the adapted configuration at rollout temperature 0.7".
        return {"lr": 2e-6, "beta": 0.04, "T": 0.7, "Q": q, "C": c, **sampling}
    if method == "knowrl":
        # Table 7: 1e-5 / 0.001. The paper states no KnowRL temperature; its release sets none
        # (zjunlp/KnowRL@f75b0bb train/script/grpo.yaml), so TRL 0.23's default 1.0.
        return {"lr": 1e-5, "beta": 0.001, "T": 1.0, "Q": q, "C": c, **sampling}
    if method == "rlfh":
        # Table 7: LR 5e-7, KL "0.01 on Llama-3.2-3B and Qwen3-4B, and 0.05 on the two 8B models".
        # A.1.3: "author-key settings at 1.0 for Llama-3.2-3B and Qwen3-4B, and adapted settings at
        # 0.7 for the two 8B models"; D.3.2: the author-key runs use KL 0.01, "top-p 0.9, top-k 20,
        # and presence penalty 1.5".
        if model in ("llama-3.2-3b", "qwen3-4b"):
            assert experiment == "rlfh-author-key"
            return {"lr": 5e-7, "beta": 0.01, "T": 1.0, "Q": q, "C": c, "top_p": 0.9, "top_k": 20,
                    "presence_penalty": 1.5}
        return {"lr": 5e-7, "beta": 0.05, "T": 0.7, "Q": q, "C": c, **sampling}
    if method == "forag":
        # Table 7: 5e-7 / 0.02; A.1.3 / D.3.3: "all at temperature 1.0"; Table 6: adjusted Q 4, C 1.
        if experiment == "forag-adjusted":
            q, c = 4, 1
        return {"lr": 5e-7, "beta": 0.02, "T": 1.0, "Q": q, "C": c, **sampling}
    raise AssertionError(f"no paper values for {method}")


def _composed(cell_overrides: list[str]) -> dict:
    overrides = list(cell_overrides)
    if "experiment=corver-a4" in overrides:
        overrides.append("pool.path=/tmp/pool_unfiltered.json")  # A4 names its pool file
    train = compose(overrides).train
    return {"lr": train.learning_rate, "beta": train.beta, "T": train.temperature, "Q": train.questions_per_step,
            "C": train.completions_per_question, "top_p": train.top_p, "top_k": train.top_k,
            "presence_penalty": train.presence_penalty}


def test_every_trained_cell_of_the_paper_grid_has_the_papers_settings():
    cells = [c for c in load_grid("paper", []).cells if c.method != "raw" and c.block != "beyond-paper"]
    assert len(cells) == 30  # every cell but the 6 Raw ones
    wrong = {}
    for cell in cells:
        expected, got = paper(cell.method, cell.model, cell.experiment), _composed(cell.overrides)
        if got != pytest.approx(expected):
            wrong[cell.label] = {k: (got[k], v) for k, v in expected.items() if got[k] != pytest.approx(v)}
    assert not wrong, f"(composed, paper) per cell: {wrong}"


# The released training engines. Values not set by a release are the defaults of the library
# it ran on (transformers: betas 0.9 / 0.999, weight decay 0; TRL v0.23.0: loss_type dapo).
CORVER = {  # shichengf/CorVer@f3cadc2 train/script/grpo_<model>.yaml:21-29 (same lines in each)
    "optim": "adamw_8bit", "lr_scheduler": "cosine", "lr_scheduler_kwargs": {}, "warmup_ratio": 0.03,
    "adam_betas": [0.9, 0.999], "weight_decay": 0.0, "loss_type": "grpo", "entropy_coef": 0.0,
    "kl_bias_correction": False,  # TRL 0.23.0 (requirements.txt) has no importance-weighted KL
    # stepwise_grpo_trainer.py:193 (R - mean) / (std + 1e-4)
    "scale_rewards": "group", "advantage_std_floor": 0.0, "advantage_epsilon": 1e-4,
}
ENGINE = {
    "corver": CORVER,
    "knowrl": {  # zjunlp/KnowRL@f75b0bb train/script/grpo.yaml:28-34 on TRL 0.23.0 (requirements.txt:219)
        **CORVER, "loss_type": "dapo",  # TRL v0.23.0 trl/trainer/grpo_config.py:538-539 (grpo.yaml sets none)
    },
    "fspo": {  # nusnlp/FSPO@7f5e4f9 (verl)
        "optim": "adamw_torch",  # verl/workers/fsdp_workers.py:270
        "adam_betas": [0.9, 0.999], "weight_decay": 0.01,  # fsdp_workers.py:272-273
        # fsdp_workers.py:269,281: get_constant_schedule_with_warmup whatever warmup_style says
        "lr_scheduler": "constant_with_warmup", "lr_scheduler_kwargs": {},
        "warmup_ratio": 0.1,  # main_grpo_qwen_instruct.sh:23 (main_grpo_llama_instruct.sh: none, below)
        "loss_type": "bnpo",  # verl/workers/actor/dp_actor.py:247-256,274: token mean per micro-batch
        "entropy_coef": 0.001,  # verl/trainer/config/ppo_trainer.yaml:32
        "kl_bias_correction": False,  # dp_actor.py:258-266 kl_loss = masked_mean(kld), no ratio
        "scale_rewards": "group", "advantage_std_floor": 0.0,
        "advantage_epsilon": 1e-6,  # verl/trainer/ppo/core_algos.py:114,151
    },
    "rlfh": {  # AlignRM/RLFH@78cd846 (OpenRLHF)
        "optim": "adamw_torch",  # source/ppo/ppo_actor.py:223-224 (DeepSpeed Adam, AdamW mode)
        "adam_betas": [0.9, 0.95], "weight_decay": 0.0,  # runs/train_ray.py:395, :363 (--l2 0)
        "lr_scheduler": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.1},  # ppo_actor.py:237-242
        "warmup_ratio": 0.03,  # runs/train_ray.py:382
        "loss_type": "grpo",  # OpenRLHF PolicyLoss: per-sequence mean
        "entropy_coef": 0.0,
    },
    "forag": CORVER,  # no released code: the shared protocol, which is CorVer's release
}
ENGINE_KEYS = ("optim", "lr_scheduler", "lr_scheduler_kwargs", "warmup_ratio", "adam_betas", "weight_decay",
               "loss_type", "entropy_coef", "kl_bias_correction", "scale_rewards", "advantage_std_floor",
               "advantage_epsilon")


# The vLLM importance-sampling correction each original applied to its loss (train.vllm.importance_sampling_*,
# which grpo_args hands to TRL 1.16 as vllm_importance_sampling_*).
NO_CORRECTION = {"vllm_importance_sampling_correction": False}
IMPORTANCE_SAMPLING = {
    # shichengf/CorVer@f3cadc2 train/stepwise_grpo_trainer.py:321-341 calls unsloth's grpo_compute_loss_slow
    # without use_vllm, so no ratio is applied (unsloth_zoo 2026.2.1 rl_replacements.py:321,343-348,423-424),
    # and unsloth 2026.2.1 disables TRL's own (models/rl_replacements.py:408-417)
    "corver": NO_CORRECTION,
    # zjunlp/KnowRL@f75b0bb on unsloth 2025.11.3: use_vllm (grpo.yaml:43) gives the loss
    # min(exp(old - sampling), cap) per token, cap TRL 0.23's 2.0 (unsloth_zoo 2025.11.4
    # rl_replacements.py:564-565,265-270,323-324)
    "knowrl": {"vllm_importance_sampling_correction": True, "vllm_importance_sampling_mode": "token_truncate",
               "vllm_importance_sampling_clip_max": 2.0, "vllm_importance_sampling_clip_min": None},
    "fspo": NO_CORRECTION,  # nusnlp/FSPO@7f5e4f9 verl dp_actor.py:244-250: the ratio is against old log-probs only
    "rlfh": NO_CORRECTION,  # AlignRM/RLFH@78cd846 experience_maker.py:199: old log-probs are the actor's own forward
    "forag": NO_CORRECTION,  # reconstructed: no code; PPO on its own rollouts
    "nover": NO_CORRECTION,  # thinkwee/NOVER@cb1a4ef requirements.txt:2 trl==0.16.0: no such correction
    # the plugins beyond the paper (plugins/<name>/README.md, "Training engine")
    "truthrl": NO_CORRECTION,  # TruthRL (verl, copy muyupan/TruthRL@1424295): train_grpo.sh sets no rollout correction
    "binary_rar": NO_CORRECTION,  # chentong0/rl-binary-rar@d97ea69 grpo_fast_fact_v2.py:1040-1069: no vLLM ratio
    "rlcr": NO_CORRECTION,  # damanimehul/RLCR@8904bed GRPO_Trainer.py:784-798: no vLLM ratio
}


def _importance_sampling_of(train) -> dict:
    from factrl.harness.training.vllm_settings import vllm_args

    got = vllm_args(train)
    if not got["vllm_importance_sampling_correction"]:
        return {"vllm_importance_sampling_correction": False}
    return {k: v for k, v in got.items() if k.startswith("vllm_importance_sampling")}


def test_every_trained_cell_corrects_vllm_rollouts_as_its_original():
    cells = [c for c in load_grid("paper", []).cells if c.method != "raw"]
    wrong = {c.label: _importance_sampling_of(compose([*c.overrides, "train.use_vllm=true"]).train) for c in cells
             if _importance_sampling_of(compose([*c.overrides, "train.use_vllm=true"]).train)
             != IMPORTANCE_SAMPLING[c.method]}
    assert not wrong, wrong
    for method, expected in IMPORTANCE_SAMPLING.items():
        for extra in ([], ["experiment=knowrl-unsloth"] if method == "knowrl" else []):
            train = compose([f"method={method}", "model=qwen3-8b", "train.use_vllm=true", *extra]).train
            assert _importance_sampling_of(train) == expected, (method, extra)


def test_the_correction_reaches_trls_config(tmp_path):
    from factrl.harness.training.args import grpo_args

    for method, expected in IMPORTANCE_SAMPLING.items():
        args = grpo_args(compose([f"method={method}", "model=tiny-llama", "train.use_vllm=true"]), tmp_path)
        assert {k: getattr(args, k) for k in expected} == expected, method


def engine(method: str, model: str) -> dict:
    expected = dict(ENGINE[method])
    if method == "fspo" and model.startswith("llama"):
        # main_grpo_llama_instruct.sh:12-56 sets no ratio, but verl gives step 0 LR 0 (one warmup step)
        expected["warmup_ratio"] = 0.01
    return expected


def _engine_of(train) -> dict:
    from omegaconf import OmegaConf

    plain = OmegaConf.to_container(train, resolve=True)
    return {k: plain[k] for k in ENGINE_KEYS}


def test_every_main_table_cell_trains_with_its_originals_engine():
    cells = [c for c in load_grid("paper", [], blocks=["main", "rlfh-author-key", "rlfh-adapted", "forag-adjusted",
                                                       "forag-initial"]).cells if c.method != "raw"]
    assert {(c.method, c.model) for c in cells} == {(m, p) for m in ENGINE for p in MAIN_MODELS}
    for cell in cells:
        got = _engine_of(compose(cell.overrides).train)
        expected = engine(cell.method, cell.model)
        assert {k: got[k] for k in expected} == expected, cell.label


def test_nover_plugin_brings_its_released_engine():
    # thinkwee/NOVER@cb1a4ef: config.py:295-337 sets no optimizer or schedule (transformers'
    # defaults: AdamW, linear, no warmup), trainer.py:133 token mean; config.py:65 defines
    # SCALE_REWARDS = False but never passes it to GRPOConfig, so TRL 0.16 divides by the std
    # (trainer.py:324-326); the clip is config.py:66-67 (epsilon 0.1, epsilon_high 0.2).
    train = compose(["method=nover", "model=qwen3-4b"]).train
    got = _engine_of(train)
    assert got == ({"optim": "adamw_torch", "lr_scheduler": "linear", "lr_scheduler_kwargs": {},
                                 "warmup_ratio": 0.0, "adam_betas": [0.9, 0.999], "weight_decay": 0.0,
                                 "loss_type": "bnpo", "entropy_coef": 0.0, "kl_bias_correction": False,
                                 "scale_rewards": "group",
                                 "advantage_std_floor": 0.0, "advantage_epsilon": 1e-4})
    assert (train.epsilon_low, train.epsilon_high) == (0.1, 0.2)


PLUGIN_ENGINES = {
    # facebookresearch/TruthRL (copy muyupan/TruthRL@1424295): verl fsdp_workers.py:433-455 (AdamW, constant
    # schedule), actor.yaml:69,117,123 (token mean, no warmup, weight decay 0.01), train_grpo.sh:32 (micro batch 1:
    # each sequence's token mean), core_algos.py:265 (eps 1e-6)
    "truthrl": {"optim": "adamw_torch", "lr_scheduler": "constant_with_warmup", "lr_scheduler_kwargs": {},
                "warmup_ratio": 0.0, "adam_betas": [0.9, 0.999], "weight_decay": 0.01, "loss_type": "grpo",
                "entropy_coef": 0.0, "kl_bias_correction": False, "scale_rewards": "group",
                "advantage_std_floor": 0.0, "advantage_epsilon": 1e-6},
    # chentong0/rl-binary-rar@d97ea69 open-instruct run: grpo_fast_fact_v2.py:195-199,679,1069,1689-1690, README.md:165
    "binary_rar": {"optim": "adamw_torch", "lr_scheduler": "linear", "lr_scheduler_kwargs": {}, "warmup_ratio": 0.0,
                   "adam_betas": [0.9, 0.999], "weight_decay": 0.0, "loss_type": "bnpo", "entropy_coef": 0.0,
                   "kl_bias_correction": False, "scale_rewards": "group", "advantage_std_floor": 0.0,
                   "advantage_epsilon": 1e-8},
    # damanimehul/RLCR@8904bed configs/Qwen-7B/hotpot/RLCR.yaml:30,48,55; arguments.py:236-237; GRPO_Trainer.py:688
    "rlcr": {"optim": "adamw_torch", "lr_scheduler": "constant_with_warmup", "lr_scheduler_kwargs": {},
             "warmup_ratio": 0.05, "adam_betas": [0.9, 0.999], "weight_decay": 0.0, "loss_type": "bnpo",
             "entropy_coef": 0.0, "kl_bias_correction": False, "scale_rewards": "none", "advantage_std_floor": 0.0,
             "advantage_epsilon": 1e-4},
}


@pytest.mark.parametrize("method", sorted(PLUGIN_ENGINES))
def test_the_plugins_bring_their_released_engines(method):
    pytest.importorskip(f"factrl_{method}", reason=f"plugins/{method} is not installed (make setup installs it)")
    train = compose([f"method={method}", "model=qwen3-4b"]).train
    assert _engine_of(train) == PLUGIN_ENGINES[method]
    assert (train.epsilon_low, train.epsilon_high) == (0.2, 0.2)


@pytest.mark.parametrize("cell", [["method=rlfh", "model=qwen3-8b"],
                                  ["method=rlfh", "model=llama-3.2-3b", "experiment=rlfh-author-key"],
                                  ["method=knowrl", "model=qwen3-4b"]])
def test_cfg_job_shows_the_originals_engine_and_sampling(cell):
    result = harness("run", "--cfg", "job", *cell)
    assert result.returncode == 0, result.stderr
    train = yaml.safe_load(result.stdout)["train"]
    method = cell[0].split("=")[1]
    model = cell[1].split("=")[1]
    expected = engine(method, model)
    assert {k: train[k] for k in expected} == expected
    experiment = cell[2].split("=")[1] if len(cell) > 2 else None
    want = paper(method, model, experiment)
    assert (train["beta"], train["temperature"], train["top_p"], train["top_k"], train["presence_penalty"]) == \
        pytest.approx((want["beta"], want["T"], want["top_p"], want["top_k"], want["presence_penalty"]))


def test_rlfhs_two_d32_configurations_on_the_small_models():
    """CorVer D.3.2: adapted = KL 0.05 / T 0.7; author-key = KL 0.01 / T 1.0 with top-p 0.9, top-k 20,
    presence 1.5. `method=rlfh` alone on 3B / 4B is neither (KL 0.01 / T 1.0, no author sampling)."""
    def key(overrides):
        t = compose(overrides).train
        return (t.beta, t.temperature, t.top_p, t.top_k, t.presence_penalty)

    adapted, author_key = (0.05, 0.7, 1.0, 0, 0.0), (0.01, 1.0, 0.9, 20, 1.5)
    for model in ("llama-3.2-3b", "qwen3-4b"):
        assert key(["experiment=rlfh-adapted", f"model={model}"]) == pytest.approx(adapted)
        assert key(["experiment=rlfh-author-key", f"model={model}"]) == pytest.approx(author_key)
        assert key(["method=rlfh", f"model={model}"]) not in (adapted, author_key)
    for model in ("llama-3.1-8b", "qwen3-8b"):
        assert key(["method=rlfh", f"model={model}"]) == pytest.approx(adapted)


def test_trls_defaults_vector_backs_the_settings_left_to_trl(tmp_path):
    """Vector trl/grpo_config_defaults (GRPOConfig() under TRL 0.23.0 and 1.16.0): what KnowRL's yaml
    leaves to TRL 0.23 is what the harness sets (loss_type dapo, the vLLM cap 2.0, no truncation mask),
    and the installed TRL 1.16 still has the stored defaults, so the explicit settings are needed."""
    import json

    import torch
    from trl import GRPOConfig

    from tests.helpers import REPO

    stored = {c["name"]: c["output"] for c in json.loads(
        (REPO / "tests" / "reference_vectors" / "trl" / "grpo_config_defaults.json").read_text())["cases"]}
    v023, v116 = stored["trl-0.23.0"], stored["trl-1.16.0"]
    knowrl = compose(["method=knowrl", "model=qwen3-8b"]).train
    assert knowrl.loss_type == v023["loss_type"]
    assert knowrl.vllm.importance_sampling_clip_max == v023["vllm_importance_sampling_cap"]
    assert knowrl.vllm.importance_sampling_mode == "token_truncate"  # 0.23: a per-token cap, no mode field
    assert knowrl.mask_truncated_completions is v023["mask_truncated_completions"] is False
    installed = GRPOConfig(output_dir=str(tmp_path), report_to=[], use_cpu=not torch.cuda.is_available(),
                           bf16=torch.cuda.is_available())
    for field, value in v116.items():
        if value != "ABSENT":
            assert getattr(installed, field) == value, field
    assert installed.vllm_importance_sampling_mode == "sequence_mask"  # what every vLLM run got before
