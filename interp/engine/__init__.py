"""Re-judging a finished run: variants keyed by a hash (a killed job resumes), the judge pool, where tasks run."""
