"""`harness grid`: comparison grids expanded into `harness run` jobs (expand.py: the grid file, its cells,
their look-up and the sweeps), launched (launch.py), checked for a training signal (checks.py) and
published (publish.py); cli.py is the command.
"""
from .expand import (LAUNCHERS, GRID_KEYS, BLOCK_KEYS, Cell, Grid, PUBLISH_KEYS, PROBE_KEYS, check_settings,
    load_grid, look_up, sweeps)


__all__ = ["LAUNCHERS", "GRID_KEYS", "BLOCK_KEYS", "Cell", "Grid", "PUBLISH_KEYS", "PROBE_KEYS",
           "check_settings", "load_grid", "look_up", "sweeps"]
