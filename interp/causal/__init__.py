"""The causal test: a run re-judged under a spec, the tested judge against control judges (its design, the
judge-level test, the matched null, the loop that runs it)."""
