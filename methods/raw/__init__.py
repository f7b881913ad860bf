"""`raw`: the unmodified model, evaluated with no training. The reference row of every table."""
from factrl.harness.core.method import Method


class Raw(Method):
    name = "raw"
    label = "Raw"
    algorithm = "none"
    description = "the unmodified model (no training): the reference row of every comparison"
    version = "1"

    def build_reward(self, ctx):
        return None


METHOD = Raw
