"""Results as typed objects: what the experiments write to disk and every reader gets back.

- `base.py`: `ResultModel`, the pydantic base every result model shares (read by attribute; a key it does not
  declare is refused);
- `causal.py`: the causal test of one intervention over a run (`interventions/*/result.json`): `CausalResult`
  with one `JudgeTest` per tested judge;
- `summary.py`: a DBG run's scores (`summary.json`): `RunSummary` with one `JudgeScores` per judge;
- `rows.py`: a re-judging variant (`variants/*/variant.json`), a sweep row (`results.csv`), a localisation row;
- `explain.py`: `interp explain`'s `explain.json` (`Explanation`, one `Candidate` per tested set);
- `studies.py`: validation.json, restyle.json, steering's table.json, attention_summary.json, organism_metrics.json,
  a steering direction's sidecar;
- `organisms.py`: an organism adapter's `manifest.json` (`OrganismManifest`);
- `run_files.py`: a run's bookkeeping (identity.json, adapters.json, prompts.json, gold_checks.json) and its
  attention stores' indexes;
- `codec.py`: the one place that reads and writes these files, with `schema_version` and the migrations from
  files written before it (older key names are renamed there, never by a reader).
"""
