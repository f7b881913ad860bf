"""factrl-harness core: CLI, config, run orchestration, method registry, models, timer,
training engine and the corpus co-occurrence service."""


__version__ = "0.1.0"
