"""Tiny NLI models built once per session (a few seconds on one thread)."""
from __future__ import annotations

import pytest

from .tiny_models import build_deberta, build_hhem, build_t5_foundation

NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}  # MoritzLaurer's order
MNLI_LABELS = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}  # microsoft *-mnli: entailment at 2
NO_ENTAILMENT = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}


@pytest.fixture(scope="session")
def foundation(tmp_path_factory):
    return build_t5_foundation(tmp_path_factory.mktemp("flan-t5-tiny"))


@pytest.fixture(scope="session")
def hhem_dir(tmp_path_factory, foundation):
    return build_hhem(tmp_path_factory.mktemp("hhem-tiny"), foundation)


@pytest.fixture(scope="session")
def deberta_dirs(tmp_path_factory):
    return {name: build_deberta(tmp_path_factory.mktemp(f"deberta-{name}"), labels)
            for name, labels in (("nli", NLI_LABELS), ("mnli", MNLI_LABELS), ("none", NO_ENTAILMENT))}
