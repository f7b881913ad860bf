"""The plugin's tests: one thread, no hub (as the harness's own tests), before torch is imported.

They need the plugin installed (`pip install -e plugins/rlcr`; the harness's `make setup`
does it); each module skips with that reason otherwise.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
