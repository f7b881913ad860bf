"""Data-parallel training pieces: process identity, gathers and global statistics.

With W processes TRL's RepeatSampler hands process k the k-th consecutive slice of the global
generation batch (B = W x B_local completions, each question repeated G times in a row), so a
GRPO group of G completions may straddle two processes. The method's per-token returns are
computed locally, so the trainer gathers them in process order (the order TRL's own reward
gather uses), computes the group advantages on the whole batch with `token_advantages`, and
keeps its own rows: advantages are then the same as on one process for the same batch. PPO
needs no groups, only its advantage whitening, which uses global statistics (`global_whiten`).

Process identity comes from the launcher's environment (RANK / WORLD_SIZE, set by torchrun and
`accelerate launch`), so the run orchestrator can ask before any trainer exists; every
collective goes through Accelerate's PartialState, which TRL's Accelerator shares.
"""
from __future__ import annotations

import os
from typing import Any

import torch

from ..core.errors import ConfigError
from .advantages import AdvantageStats, token_advantages
from .gae import whiten


# Timeout of the process group's collectives (launcher.timeout_min, set by `configure`). The
# harness creates Accelerate's PartialState before TRL's Accelerator, and the singleton keeps
# the first settings: without one here, transformers' ddp_timeout never applies and NCCL's
# 10-minute default does.
_TIMEOUT_S: float = 3600.0


def configure(timeout_s: float | None) -> None:
    """Set the process-group timeout before the first collective (run_task does, from the config)."""
    global _TIMEOUT_S
    if timeout_s is not None:
        if float(timeout_s) <= 0:
            raise ConfigError(f"launcher.timeout_min must be > 0 (got {float(timeout_s) / 60:g})")
        _TIMEOUT_S = float(timeout_s)


def timeout_s() -> float:
    return _TIMEOUT_S


def world_size() -> int:
    """Processes in this run (1 when not started by a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def rank() -> int:
    """This process's global rank (0 when not started by a launcher)."""
    return int(os.environ.get("RANK", "0") or 0)


def is_main() -> bool:
    """True on the process that writes the run directory, evaluates and records."""
    return rank() == 0


def _state():
    """Accelerate's process state, initialised as the trainer will (TrainingArguments' use_cpu on a
    machine without CUDA): a bare PartialState() there would set up a process group but report
    one process, and its collectives would silently do nothing."""
    from datetime import timedelta

    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available(), timeout=timedelta(seconds=_TIMEOUT_S))


def barrier() -> None:
    """Wait until every process gets here (no-op on one process)."""
    if world_size() > 1:
        _state().wait_for_everyone()


def shutdown() -> None:
    """Tear the process group down before the interpreter exits (no-op when none was set up).

    Left to interpreter exit, gloo's worker threads can be destroyed while still joinable and
    the process aborts ("terminate called without an active exception", exit -6) after its
    work is done, which a launcher reports as a failed run."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def share_from_main(value: Any) -> Any:
    """`value` as rank 0 has it, on every process (rank 0's argument wins; no-op on one process)."""
    if world_size() == 1:
        return value
    from accelerate.utils import broadcast_object_list

    _state()  # initialises the process group when nothing has yet
    box = [value if is_main() else None]
    broadcast_object_list(box, from_process=0)
    return box[0]


def gather_in_order(items: list) -> list:
    """Every process's `items` concatenated in process order, on every process."""
    if world_size() == 1:
        return list(items)
    from accelerate.utils import gather_object

    _state()
    return gather_object(list(items))


def gather_records(records: list | None) -> list:
    """Reward records of every process on rank 0 (process order), [] elsewhere, so one process
    appends them to reward_records.jsonl. Collective: every process must call it."""
    gathered = gather_in_order(list(records or []))
    return gathered if is_main() else []


def global_token_advantages(
    local_returns: list[list[float] | None], group_size: int, *, width: int, eps: float = 1e-4,
    std_floor: float = 0.0, scale: str = "group",
) -> tuple[torch.Tensor, AdvantageStats]:
    """This process's (B_local, width) advantages computed over the global batch.

    local_returns: B_local ragged per-token return lists (None = no signal), this process's
        slice of the global batch; width: this process's padded completion length T.
    The returns of all W processes are gathered in process order (B = sum of B_local), grouped
    in consecutive blocks of G as on one process, and this process keeps rows
    [offset, offset + B_local) cut or padded to `width` (a row never has more than `width`
    tokens, so the cut loses nothing). Stats are those of the global batch.
    """
    if world_size() == 1:
        return token_advantages(local_returns, group_size, width=width, eps=eps, std_floor=std_floor, scale=scale)
    sizes = gather_in_order([len(local_returns)])
    everything = gather_in_order(local_returns)
    offset = sum(sizes[:rank()])
    advantages, stats = token_advantages(everything, group_size, eps=eps, std_floor=std_floor, scale=scale)
    mine = advantages[offset:offset + len(local_returns)]
    out = torch.zeros(len(local_returns), width, dtype=mine.dtype)
    keep = min(width, mine.size(1))
    out[:, :keep] = mine[:, :keep]
    return out, stats


def _all_reduce_sum(value: torch.Tensor) -> torch.Tensor:
    """Sum of `value` over processes (float64 on CPU: gloo and NCCL both take it)."""
    import torch.distributed as dist

    device = _state().device
    total = value.detach().to(device=device, dtype=torch.float64).clone()
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return total.cpu()


def global_whiten(values: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """`gae.whiten` with the mean and the (population) variance over every process's valid tokens.

    values, mask: (B_local, T). Two all-reduces (sum and count, then the squared deviations
    from the global mean) give exactly the one-process statistics of the concatenated batch.
    """
    if world_size() == 1:
        return whiten(values, mask, eps)
    mask = mask.to(values.dtype)
    sums = _all_reduce_sum(torch.stack([(values * mask).sum(), mask.sum()]))
    count = float(sums[1])
    if count < 1:
        return values * mask
    mean = (sums[0] / count).to(values.dtype).to(values.device)
    squares = _all_reduce_sum((((values - mean) * mask) ** 2).sum())
    var = (squares / count).to(values.dtype).to(values.device)
    return (values - mean) * torch.rsqrt(var.clamp(min=eps)) * mask


def average_gradients(params: list[torch.Tensor]) -> None:
    """Average the gradients of `params` over processes in place (no-op on one process).

    For parameters trained outside DDP's forward: PPO's critic (value head; its LoRA runs on the
    unwrapped model), whose gradients DDP never reduces. Averaging is linear, so a gradient DDP
    already averaged in part comes out the same as if it had reduced none of it.
    """
    if world_size() == 1:
        return
    import torch.distributed as dist

    _state()
    for p in params:
        grad = p.grad if p.grad is not None else torch.zeros_like(p)  # every process reduces every tensor
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        p.grad = grad / world_size()


def broadcast_parameters(params: list[torch.Tensor]) -> None:
    """Give every process rank 0's values of `params` (no-op on one process): for weights DDP
    does not manage, whose random initialisation differs per process (TRL seeds each process
    differently so that they sample different completions)."""
    if world_size() == 1:
        return
    import torch.distributed as dist

    _state()
    with torch.no_grad():
        for p in params:
            dist.broadcast(p.data, src=0)


def check_whole_groups(method: Any, generation_batch_size: int, group_size: int, processes: int) -> None:
    """A method that needs whole groups in each reward call (`Method.whole_groups`) gets them
    only when the per-process generation batch is a multiple of G; else a one-line error."""
    if processes <= 1 or not getattr(method, "whole_groups", False):
        return
    per_process = int(generation_batch_size) // int(processes)
    if per_process % int(group_size):
        questions = int(generation_batch_size) // int(group_size)
        raise ConfigError(
            f"method '{method.name}' needs whole groups in each reward call, but train.questions_per_step="
            f"{questions} x {group_size} completions split over {processes} processes gives {per_process} "
            f"per process, not a multiple of {group_size}; make train.questions_per_step a multiple of {processes}")


def deepspeed_stage(environ: Any = None) -> int | None:
    """The ZeRO stage `accelerate launch` set up for this process (its environment), None without DeepSpeed."""
    env = os.environ if environ is None else environ
    if str(env.get("ACCELERATE_USE_DEEPSPEED", "false")).lower() != "true":
        return None
    return int(env.get("ACCELERATE_DEEPSPEED_ZERO_STAGE") or 0)


def refuse_deepspeed(method: Any, environ: Any = None) -> None:
    """Methods that cannot train under DeepSpeed stop here, before the model or TRL's trainer (and
    a colocated vLLM engine) is set up.

    - PPO (`algorithm: ppo`): the critic's value head lives outside the DeepSpeed engine, which
      also takes over gradient clipping, where the critic's gradients are averaged over processes.
    - `needs_policy` (e.g. NOVER): the reward's policy forwards depend on the data, so under ZeRO-3
      ranks make different numbers of all-gathers and wait on each other; and the adapter copies
      the handle mixes and saves are partitioned (empty on every rank) after deepspeed.initialize.
    """
    stage = deepspeed_stage(environ)
    if stage is None:
        return
    config = f"launcher.config=zero{stage}" if stage else "DeepSpeed"
    if getattr(method, "algorithm", None) == "ppo":
        raise ConfigError(f"method '{method.name}' (PPO) trains under launcher.config=ddp (or launcher=torchrun), not "
                          f"{config}: the critic's value head is outside the DeepSpeed engine")
    if getattr(method, "needs_policy", False):
        raise ConfigError(f"method '{method.name}' reads the policy in its reward (needs_policy) and trains under "
                          f"launcher.config=ddp (or launcher=torchrun), not {config}: its policy forwards differ in "
                          f"number between ranks, and its adapter copies are partitioned under DeepSpeed")
