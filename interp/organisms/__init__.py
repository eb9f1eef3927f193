"""Model organisms: judges with a known answer (a trained null judge and a planted self-preference judge).

`config` reads an organism's TOML, `data` makes pairs with known gold and their labels, `train` fits a LoRA
adapter on the CPU, `evaluate` checks an adapter on held-out items through the toolkit's own DBG run.
Loading a shipped adapter lives lower, in `interp.core.adapters`, so `load_model` can use it.
"""
