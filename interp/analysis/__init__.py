"""Views of a finished run, no model loaded: stored span attention, Figure 7 statistics, metric lenses, runs side
by side. A view that needs a model pass has the pass in `interp.run` or `interp.core`, its rendering in
`interp.report`, and the glue in `interp.api` (`interp.api.token_attention`, `Judge.attention_pattern`)."""
