"""Style rewriting in a notebook (DBG paper, Section 4.2 and Appendix A.3):

    result = interp.restyle("runs/demo", style="plain", out="runs/demo-plain")   # restyle.json, a RestyleResult
    result.judges["smollm2-135m-instruct"].dbg_after

The same code as `interp restyle RUN --style STYLE [--rewriter MODEL] --out DIR`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from interp.api.runs import run_root
from interp.results.studies import RestyleResult
from interp.studies.restyle import DEFAULT_EMBEDDER, SIMILARITY_THRESHOLD, restyle_options, restyle_run


def restyle(
    run: Any,
    *,
    out: str | Path,
    style: str = "plain",
    rewriter: str | None = None,
    rewriter_url: str | None = None,
    embedder: str = DEFAULT_EMBEDDER,
    threshold: float = SIMILARITY_THRESHOLD,
    control_judges: str | Sequence[str] | None = None,
    test_alpha: float = 0.05,
    projection: str = "auto",
    progress: bool = True,
    overwrite: bool = False,
) -> RestyleResult:
    """Rewrite a finished run's answers in one style, judge them again in a derived run at `out`, and test DBG
    before and after per judge.

    >>> run = interp.load_run(run_dir)
    >>> run.models[1]
    'writer-y'
    >>> result = interp.restyle(run, out="runs/demo-plain", rewriter="smollm2-135m-instruct")  # doctest: +SKIP
    >>> result.judges[run.models[0]].share_removed  # doctest: +SKIP

    Args:
        run: a run directory (or a `RunResult`, `RunDir`).
        out: the derived run's folder.
        style: "plain" (the offline deterministic normaliser) or a prompted style ("humorous", "attractive",
            "formal") for `rewriter`.
        rewriter: a local model, or with `rewriter_url` an OpenAI-compatible server's model; never an author,
            judge or gold judge of the run.
        embedder: the local model whose mean-pooled hidden states give the similarity of each original to its
            rewrite; `threshold`: below it a rewrite is flagged.
        control_judges: the judge-level test's control judges among the run's judges (None: automatic).

    Returns:
        restyle.json as the `RestyleResult` written, read by attribute: per judge (`result.judges[judge]`)
        `dbg_before`, `dbg_after`, the test's fields (`share_removed`, `causal`, `test.p_value`, ...) and
        `similarity`; the derived run's report is `out`/report.html.

    Raises:
        InterpError: bad input (a rewriter that is an author or a judge, an unknown style, ...), before anything
            is written.
    """
    options = restyle_options(
        style=style,
        rewriter=rewriter,
        rewriter_url=rewriter_url,
        embedder=embedder,
        threshold=threshold,
        control_judges=control_judges,
        test_alpha=test_alpha,
        projection=projection,
    )
    return restyle_run(run_root(run), Path(out), options, progress=progress, overwrite=overwrite)
