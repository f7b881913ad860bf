"""Models: resolution to a recorded identity and loading (loader.py), random stand-ins of real shapes
(shapes.py, disk.py), and the rollout speed-ups on the weights (merged_linears.py, decode_speed.py).
"""
from .loader import (EMBEDDED, CONVERSION_VERSION, ModelIdentity, cache_dir, writable_cache_dir,
    quiet_transformers, resolve, RANDOM_MARKER, saved_random, load_tokenizer, load_model)


__all__ = ["EMBEDDED", "CONVERSION_VERSION", "ModelIdentity", "cache_dir", "writable_cache_dir",
           "quiet_transformers", "resolve", "RANDOM_MARKER", "saved_random", "load_tokenizer", "load_model"]
