"""Causal experiments over a finished run: the engine, interventions with controls, sweeps, steering, the demo."""
