"""Where in a judge its preference may live: heads ranked by their part in P(own), residual-stream directions."""
