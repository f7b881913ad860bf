"""The interface every reward method implements.

A method is a name, an algorithm (`grpo`, `ppo`, or `none` for evaluation-only) and a
reward builder. Given the run context, the builder returns a callable that turns a batch
of completions into per-token returns (plus diagnostics and per-item log records). The
training engine owns everything else: sampling, grouping, advantages, the optimiser.

Contract of the reward callable (the reward contract, docs/CONTRACTS.md): keyword-only arguments plus **kwargs; one
list of per-token returns per completion; `None` for a completion means "no signal"
(the engine leaves it out of its group's mean and std, gives it a zero advantage, and
counts it under `rewards/<name>/no_signal`).

Provenance hook: `components(reward)` describes every part of the reward that can
change a result and that the method's name and version do not pin down: an extractor, a
corpus index, an NLI model, a judge, the settings. The engine calls it right after
`build_reward` with the reward returned there and writes `train/components.json`; `harness
run` copies it into run.json and metrics.json, and the leaderboard marks rows whose result
used a stand-in (e.g. a heuristic in place of the paper's model). One entry per part:

    {"kind": "extractor" | "corpus" | "judge" | "nli" | "settings" | ...,
     "backend": str | None, "model": str | None, "revision": str | None,
     "stand_in": bool,      # true when it replaces the component the paper used
     "label": str,          # short text for tables, e.g. "heuristic extractor"
     "note": str,           # why it is a stand-in (required when stand_in)
     ...}                   # further JSON facts: index manifest hash, tokenizer, alphas, ...

The default returns `{"settings": ...}` for a method with `settings_class` (its parsed
settings, `Method.settings_component`; {} without one); a method with a model-backed or
swappable reward component overrides it and adds that component's entry. `settings_entry(label,
values)` builds a settings entry with another label or a selection of values.

Hooks a method may implement or use, beyond the reward:
- `RewardOutput.extras`: one payload per completion that the reward hands to the method's
  own hooks (FSPO's per-token factuality mask), never logged by the engine.
- `Method.shape_advantages(advantages, *, output, mask, group_size)`: called by the
  token-level trainer after the group advantages, with tensors of shape (B, T); the default
  returns them unchanged (CorVer), FSPO flips signs here (docs/BASELINES.md §2.2).
- `RunContext.on_close(fn)`: cleanups (stop a judge server, write its stats, close a store)
  that the engine runs when training ends, on error too. The engine registers the reward's
  `close()` (when it has one) right after `build_reward`; a method does not register it itself.

Policy access inside a reward: a method that sets `needs_policy = True` receives
`policy=<factrl.harness.training.policy.PolicyHandle>` in every reward call (other rewards get
`policy=None` and ignore it through **kwargs; `harness probe` passes None, so such a reward must
say it needs the policy). The handle gives teacher-forced log-probabilities under the trained
adapter or a frozen copy of it, and makes and mixes such copies; the trainer saves the copies
with each checkpoint and restores them on resume. `setup_policy(policy)` runs once before the
first step (create copies there); `on_checkpoint(policy, step=)` after each checkpoint save,
before the copies are written. `whole_groups = True` asks the multi-process engine to check that
every reward call holds whole groups (on one process they always do).

Settings: a method that sets `settings_class` (a frozen dataclass subclassing
`factrl.harness.core.settings.Settings`) gets `self.settings`, parsed once from `method.*` when the
method is constructed (before the run directory exists, so a bad value costs nothing); an error
reads `method=<name>: method.<key>: ...`. `self.settings` is the one way such a method reads its
options; `RunContext` carries no method node. A method without `settings_class` reads
`self.config`, the composed `method` node (`config_defaults` supply its keys).
docs/CONTRACTS.md, "Settings", has the details.

KL reference: a GRPO method with `needs_policy` may name one of the adapter copies its
`setup_policy` makes in `kl_reference_adapter` (a class attribute or a property, read once when
the trainer is built); with beta != 0 the KL term then compares the policy with that copy
instead of the adapter-disabled base (NOVER's proxy; harness/training/kl_reference.py). None
(the default): the adapter-disabled base model.

Prompt addition: a method whose reward reads something the shared prompt does not ask for
(RLCR's stated confidence) sets `prompt_addition` to the text it needs; the harness appends it to
the shared system prompt (harness/core/prompts.py `system_prompt`, after one space) in training, in the
evaluation of the method's runs and in `harness probe`, the same text everywhere, and records it
(`generation.method_prompt`, the `prompt` component); published tables mark such rows. None (the
default): the shared prompt unchanged, byte for byte.

Format warm-up: a method whose reward needs an output format that a small model does not follow
from the instruction alone (RLCR's analysis and confidence) returns a `FormatWarmup` from
`format_warmup()`: a few supervised steps on the same LoRA adapter before the first RL step (the
paper's SFT+RL variants). The engine (harness/training/format_warmup.py) runs it only where the
model config asks for it (`model.format_warmup: true`, the embedded SmolLM2-135M) and its `steps`
are > 0: it generates the policy's own greedy completion to training questions of the pool (the
method's prompt, never the evaluation sets), hands each to `target(turn, question=, rng=)`, which
returns the whole target turn (starting with the model's response prefix) or None to skip it, and
trains on the target's tokens. It is recorded as a stand-in (`format_warmup` component) with its
losses. None (the default): no warm-up.

Display label (optional): `label = "CorVer"` names the method in published tables; unset, the
tables show `name`. Like `fidelity`, the tables read it from the source (a string literal)
without importing the method.

The interface's versions are in the changelog beside `INTERFACE_VERSION` below.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Protocol


ALGORITHMS = ("grpo", "ppo", "none")
FIDELITIES = ("original", "reconstructed")  # Method.fidelity
# Version of this interface; bumped on any change a plugin must adapt to. `harness methods` prints
# it; a plugin may check it at import.
#
# Changelog
# 1: the first release. The hooks RewardOutput.extras, Method.shape_advantages and
#    RunContext.on_close were added for the baselines (FSPO's mask and sign flip, the judges'
#    cleanups) without a bump.
# 2: needs_policy and the `policy=` keyword of every reward call, whole_groups, setup_policy,
#    on_checkpoint.
# 3: settings_class / Method.settings; RunContext.method_config removed (a plugin that read
#    `ctx.method_config` reads `self.config` instead, or `self.settings` with a settings class);
#    the engine registers the reward's close() with on_close, so a method no longer registers it.
# 4: kl_reference_adapter (before it, the KL term always compared with the adapter-disabled base).
# 5: prompt_addition (a plugin that sets it needs a harness that appends it: before 5 it would be
#    ignored and, for RLCR, every completion would have no signal).
# 6: the harness's parts moved into layer folders: the interface is `factrl.harness.core.method`
#    (was `factrl.harness.method`), the services `factrl.harness.services.*` (judge, evidence, nli,
#    corpus, models), the answer rules `factrl.harness.core.answers`; nothing else changed, so a
#    plugin adapts by its import lines (docs/ADDING_A_METHOD.md).
# 7: format_warmup / FormatWarmup (a supervised format warm-up of the adapter before the first RL
#    step; docs/CONTRACTS.md 2.13). A plugin that returns one needs a harness that runs it: before 7
#    the hook is never called.
# No bump: `label` (display name in the tables).
INTERFACE_VERSION = 7


@dataclass
class RunContext:
    """What a reward builder may use. Built once per run by the orchestrator."""

    config: Any  # the full resolved config (OmegaConf DictConfig); the method's own options: Method.settings
    tokenizer: Any = None  # None for evaluation-only methods
    pool: list[dict] = field(default_factory=list)  # training rows: question, answers, title
    run_dir: Path | None = None
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("factrl"))
    _closers: list[Callable[[], Any]] = field(default_factory=list, repr=False)

    @property
    def pool_name(self) -> str:
        """`config.pool.name` (what error lines call the pool), or "?" without one."""
        pool = self.config.get("pool") if self.config is not None else None
        return str(pool.get("name")) if pool is not None and pool.get("name") is not None else "?"

    def on_close(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Register `fn()` to run when training ends (normally or by an error); returns fn."""
        if not callable(fn):
            raise TypeError(f"on_close needs a callable, got {type(fn).__name__}")
        self._closers.append(fn)
        return fn

    # -- shared services (evidence store, judge), opened for a method and closed with the run --
    _SERVICE_HINTS = {
        "evidence": "an evidence store: add evidence=demo or evidence=file evidence.store=STORE.sqlite3",
        "judge": "a judge: judge=embedded (offline stand-in) or judge=openai judge.base_url=URL judge.model=NAME",
    }

    def service_config(self, group: str, method: str) -> Any:
        """`config.<group>` ("evidence" or "judge") that `method` needs, or a one-line ConfigError
        saying how to set it (a judge with backend none counts as missing). Call it for every
        service before opening any, so a wrong setting costs no server start."""
        from .errors import ConfigError

        found = self.config.get(group) if self.config is not None else None
        if found is None or (group == "judge" and found.get("backend") in (None, "none")):  # judge/none.yaml
            raise ConfigError(f"method={method} needs {self._SERVICE_HINTS[group]}")
        return found

    def open_evidence(self, evidence_cfg: Any) -> Any:
        """The evidence store of `evidence_cfg` (factrl.harness.services.evidence.open_evidence), closed with the run."""
        from ..services.evidence import open_evidence

        store = open_evidence(evidence_cfg)
        self.on_close(store.close)
        return store

    def open_judge(self, judge_cfg: Any, *, prompts: Any = (), evidence: Any = None) -> Any:
        """The started, checked judge of `judge_cfg` (factrl.harness.services.judge.open_judge), closed with the run.
        `prompts`: the JudgePrompts the reward asks (listed in the judge component from the start);
        `evidence`: the run's evidence store, for judge=reference's answers that read it."""
        from ..services.judge import open_judge

        judge = open_judge(judge_cfg, run_dir=self.run_dir, prompts=tuple(prompts), evidence=evidence)
        self.on_close(judge.close)
        return judge

    def build_reward(self, method: "Method") -> Any:
        """`method.build_reward(self)`, with the reward's `close()` (when it has one) registered
        here: the one cleanup rule for every reward (interface 3); the engine and the probe use it."""
        reward = method.build_reward(self)
        close = getattr(reward, "close", None)
        if callable(close):
            self.on_close(close)
        return reward

    def close(self, *, raise_errors: bool = True) -> None:
        """Run the registered cleanups once, last registered first (a judge opened after a store
        closes before it). Every cleanup runs even when an earlier one fails; the first failure
        is raised afterwards unless `raise_errors` is false (the engine passes false while an
        error from training is already propagating, so that error is the one the user sees)."""
        closers, self._closers = self._closers[::-1], []
        first: BaseException | None = None
        for fn in closers:
            try:
                fn()
            except Exception as err:  # noqa: BLE001 - logged here, raised below
                self.logger.warning("cleanup %s failed: %s: %s", getattr(fn, "__qualname__", fn),
                                    type(err).__name__, err)
                first = first or err
        if first is not None and raise_errors:
            raise first


@dataclass
class RewardOutput:
    """Result of one reward call over B completions.

    token_returns: B lists; list b has one float per token of completion b (length T_b,
        the completion's unpadded length), or is None for "no signal". For `algorithm: ppo`
        the floats are per-token *rewards* (0 where nothing is earned), which the PPO engine
        turns into returns itself (KL penalty, critic, GAE; harness/training/ppo.py).
    diagnostics: scalar metrics for this batch, logged as `rewards/<method>/<key>`.
    records: per-item rows (e.g. one per sentence) appended to the run's JSONL log.
    extras: None, or B dicts (one per completion, in order) for the method's own hooks
        (`Method.shape_advantages` receives this output); the engine only checks the length.
    no_signal_reasons: None, or B short names (None for a completion with a signal) saying why
        a completion got no signal: `judge_failed`, `format`, `no_evidence`, ... (optional, no
        interface bump). The engine counts them into one line per step and the metrics
        `rewards/<method>/no_signal/<reason>`; a None return without a reason counts as `unstated`.
    """

    token_returns: list[list[float] | None]
    diagnostics: dict[str, float] = field(default_factory=dict)
    records: list[dict] = field(default_factory=list)
    extras: list[dict] | None = None
    no_signal_reasons: list[str | None] | None = None


class RewardFn(Protocol):
    def __call__(
        self,
        *,
        prompts: list[str],
        completions: list[str],
        completion_ids: list[list[int]],
        rows: list[dict],
        **kwargs: Any,
    ) -> RewardOutput:
        """Score B completions; `rows[b]` is the pool row (own question and gold) of completion b."""


@dataclass(frozen=True)
class FormatWarmup:
    """A method's supervised format warm-up (interface 7; the module docstring, "Format warm-up").

    steps, batch_size, learning_rate: AdamW steps over the targets (cross-entropy on the target's
        tokens only), in a seeded order; examples: how many targets to collect.
    target(turn, *, question, rng) -> str | None: `turn` is the policy's greedy completion with the
        model's response prefix in front; return the whole target turn (it must start with that
        prefix) or None to skip the question. `rng` (a seeded random.Random shared in pool order) is
        for what the target draws (RLCR's confidence). A target must not read the gold: the hook is
        given none.
    label, note: the component's label and why it is a stand-in; facts: more JSON facts for it.
    """

    steps: int
    examples: int
    batch_size: int
    learning_rate: float
    target: Callable[..., str | None]
    label: str
    note: str
    facts: dict[str, Any] = field(default_factory=dict)


def settings_entry(label: str, values: dict[str, Any]) -> dict[str, Any]:
    """A `settings` component (docs/CONTRACTS.md, "Provenance of reward components"): kind
    settings, no backend, model or revision, not a stand-in, `label`, then `values` in their order
    (components.json keeps the order, so a refactor that keeps it keeps the file's bytes)."""
    return {"kind": "settings", "backend": None, "model": None, "revision": None, "stand_in": False,
            "label": label, **values}


class Method:
    """Base class for reward methods. Subclass, set the class attributes, implement build_reward."""

    name: ClassVar[str] = ""
    algorithm: ClassVar[str] = "grpo"
    description: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    # How the method's reward relates to its paper: "original" (the authors' released code or a
    # port of it) or "reconstructed" (no public code: the reward is this harness's design from
    # the paper, e.g. FoRAG). The leaderboard marks reconstructed rows; declare it as a plain
    # string literal, since the tables read it from the source without importing the method.
    fidelity: ClassVar[str] = "original"
    # Display name in published tables ("CorVer"); a class that sets none shows its `name`. A
    # plain string literal too, read from the source like `fidelity`; the table layout
    # (configs/leaderboard/layout/*.yaml, `method_labels`) may still override it.
    label: ClassVar[str] = ""
    # Defaults for `method.*` when the method ships no configs/method/<name>.yaml (plugins).
    config_defaults: ClassVar[dict[str, Any]] = {}
    # The method's settings dataclass (a factrl.harness.core.settings.Settings); parsed from `method.*`
    # into `self.settings` when the method is built (interface 3). None: read `self.config`.
    settings_class: ClassVar[type | None] = None
    # Root-level settings the method's original used (e.g. {"train": {"loss_type": "bnpo"}}),
    # applied as `protocol/method/<name>` when the method ships no configs/protocol/method/<name>.yaml
    # (plugins): after the groups, before the per-model files and command-line overrides.
    protocol_defaults: ClassVar[dict[str, Any]] = {}
    # True: the trainer passes `policy=<PolicyHandle>` to every reward call (interface 2).
    needs_policy: ClassVar[bool] = False
    # True: the reward must see whole groups (B = n x G consecutive completions of one row);
    # the multi-process engine checks the per-process batch for it.
    whole_groups: ClassVar[bool] = False
    # GRPO, with needs_policy: the name of an adapter copy (made in setup_policy) that the KL term
    # compares with; None: the adapter-disabled base model (interface 4). May be a property.
    kl_reference_adapter: str | None = None
    # Text appended to the shared system prompt in training, evaluation and the probe, for a
    # method whose reward reads what the shared prompt does not ask for (interface 5). None: the
    # shared prompt unchanged. A plain string, fixed per method version (it is in the run's record).
    prompt_addition: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("label"):
            cls.label = cls.name  # unlabelled: the name (not a labelled parent's label)

    def __init__(self, config: Any = None):
        """`config`: the composed `method` node (None or a partial dict: the defaults fill in)."""
        self.config = config
        self.settings = self.parse_settings(config) if self.settings_class is not None else None

    @classmethod
    def parse_settings(cls, config: Any) -> Any:
        """`settings_class` parsed from `config`; a ConfigError `method=<name>: method.<key>: ...`."""
        from .errors import ConfigError

        assert cls.settings_class is not None
        try:
            return cls.settings_class.from_mapping(config, owner="method")
        except ConfigError as err:
            raise ConfigError(f"method={cls.name}: {err}") from None

    def build_reward(self, ctx: RunContext) -> RewardFn | None:
        """Return the reward callable, or None for evaluation-only methods."""
        raise NotImplementedError(f"method {self.name!r} does not implement build_reward")

    def components(self, reward: RewardFn) -> dict[str, dict[str, Any]]:
        """The reward's result-changing parts, by name (see the module docstring). Default: for a
        method with `settings_class`, `{"settings": self.settings_component(reward)}` (every parsed
        setting); without one, {}. Override to add entries (a judge, a corpus) or facts."""
        if self.settings is None:
            return {}
        return {"settings": self.settings_component(reward)}

    def settings_component(self, reward: Any = None, **facts: Any) -> dict[str, Any]:
        """The default `settings` entry: labelled "<label> settings", the parsed settings'
        `to_dict()`, then `facts` (what else the run fixed: guards, differences, prompts), in that
        order. A method whose entry needs another label or a selection of settings builds it with
        `settings_entry(label, values)`."""
        if self.settings is None:
            raise TypeError(f"method {self.name!r} has no settings_class: build its entry with settings_entry()")
        return settings_entry(f"{self.label} settings", {**self.settings.to_dict(), **facts})

    def format_warmup(self) -> FormatWarmup | None:
        """The method's supervised format warm-up, or None (the default: none). Run only where
        `model.format_warmup` is true and `steps` > 0 (interface 7)."""
        return None

    def shape_advantages(self, advantages: Any, *, output: RewardOutput, mask: Any, group_size: int) -> Any:
        """Reshape the token advantages of one generation batch; default: unchanged.

        advantages: float tensor (B, T), the group-normalised token advantages (0 on padding
            and on "no signal" completions); B = n_groups * group_size, groups consecutive.
        output: the RewardOutput of the same batch (its `extras` carry per-completion payloads).
        mask: float tensor (B, T), 1 on completion tokens, 0 on padding.
        Returns a tensor of shape (B, T); padding positions must stay 0.
        """
        return advantages

    def setup_policy(self, policy: Any) -> None:
        """Once per training, before the first step and before a resume restores the policy's
        adapter copies (make them here, e.g. `policy.copy_adapter("proxy")`); default: nothing.
        Called only when `needs_policy` is true. policy: a PolicyHandle."""

    def on_checkpoint(self, policy: Any, *, step: int) -> None:
        """After each checkpoint save at optimizer step `step`, before the adapter copies are
        written beside it (update them here, e.g. `policy.mix_adapter("proxy", keep=0.9)`);
        default: nothing. Called only when `needs_policy` is true."""

    @classmethod
    def validate(cls) -> None:
        if not cls.name or not cls.name.replace("_", "").replace("-", "").isalnum():
            raise TypeError(f"{cls.__module__}.{cls.__qualname__}: `name` must be a non-empty identifier")
        if cls.algorithm not in ALGORITHMS:
            raise TypeError(f"method {cls.name!r}: algorithm {cls.algorithm!r} is not one of {ALGORITHMS}")
        if not cls.description:
            raise TypeError(f"method {cls.name!r}: give a one-line `description`")
        if not isinstance(cls.label, str) or not cls.label.strip():
            raise TypeError(f"method {cls.name!r}: `label` must be a non-empty string (or unset: the name)")
        if cls.fidelity not in FIDELITIES:
            raise TypeError(f"method {cls.name!r}: fidelity {cls.fidelity!r} is not one of {FIDELITIES}")
        addition = cls.prompt_addition
        if addition is not None and (not isinstance(addition, str) or not addition.strip()):
            raise TypeError(f"method {cls.name!r}: `prompt_addition` must be a non-empty string (or None: the shared "
                            f"prompt unchanged)")
