"""A DBG run: its directory and records, responses, judging, gold judges, summary, and the pipeline."""
