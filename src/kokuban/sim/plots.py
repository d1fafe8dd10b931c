"""Compatibility alias: the simulator's plots live in `kokuban.present.sim_plots` (presentation).

Kept so that `from kokuban.sim.plots import save_all`, shown in earlier docs, keeps working; nothing in
the package imports this module.
"""

from kokuban.present.sim_plots import save_all

__all__ = ["save_all"]
