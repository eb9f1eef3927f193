"""Views of a finished run: stored span attention, Figure 7 statistics, per-token attention, metric lenses."""
