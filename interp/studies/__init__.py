"""Studies built on the causal test: explain (candidates, routes), sweeps, steering, organism validation,
restyle, the demo."""
