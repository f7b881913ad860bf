"""The question order of epoch e is a function of (seed, e), so a resumed run replays none.

TRL's RepeatSampler seeds one torch.Generator when the trainer is built and draws one
permutation per pass over the pool. A resumed run builds a fresh sampler, so its first pass
draws epoch 0's permutation again: resuming at an epoch boundary (or inside any epoch after the
first, where transformers skips the batches already trained) replayed the first epoch's order.
`EpochRepeatSampler` answers transformers' `set_epoch(e)` (called before every pass, on
resume too) by reseeding and drawing the e permutations before the one it uses: epoch e gets
the (e+1)-th permutation of the seeded generator, exactly what an uninterrupted TRL run draws,
so uninterrupted runs keep their order and scores.
"""
from __future__ import annotations

import torch
from trl.trainer.utils import RepeatSampler


class EpochRepeatSampler(RepeatSampler):
    """RepeatSampler whose shuffle depends on the epoch transformers sets, not on how many
    passes this instance has made (module docstring)."""

    epoch = 0

    @classmethod
    def like(cls, sampler: RepeatSampler) -> "EpochRepeatSampler":
        """The same sampler (dataset, repeats, batch, shuffle, seed) with epoch-keyed shuffles."""
        return cls(data_source=sampler.data_source, mini_repeat_count=sampler.mini_repeat_count,
                   batch_size=sampler.batch_size, repeat_count=sampler.repeat_count, shuffle=sampler.shuffle,
                   seed=sampler.seed)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        if self.shuffle and self.seed is not None:  # unseeded: TRL's own (unreproducible) stream
            self.generator.manual_seed(int(self.seed))
            for _ in range(self.epoch):
                torch.randperm(self.num_samples, generator=self.generator)
        # Drawn now, not at the first next(): nothing else can move the generator in between.
        return iter(list(super().__iter__()))
