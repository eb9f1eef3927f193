"""The restyle section of a derived run's report: DBG before and after per judge with the judge-level test,
the semantic check (similarity table, originals and rewrites in 2-D per author), Figure 7 before and after;
and the same as a rich table in the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from interp.analysis.compare import own_minus_other_profiles
from interp.formatting import fixed, p_value, pct, pts, pts_ci
from interp.report.figures import Figure, png_data_uri, save_figure, subplots
from interp.report.html import table_html
from interp.results.studies import RestyleResult
from interp.run.store import RunDir
from interp.storage import atomic_write_text
from interp.templating import render

SECTION_TITLE = "Style rewriting: DBG before and after the rewrite (Section 4.2, Appendix A.3)"
TSNE_MIN_POINTS = 30  # "auto": t-SNE (the paper's) from this many points, PCA below (t-SNE needs a neighbourhood)

_SECTION = (
    "<p>Both authors' answers of <code>{{ source_run }}</code> were rewritten in the <b>{{ style }}</b> "
    "style by <b>{{ rewriter }}</b> "
    "({{ kind }}), then judged again by the same judges; gold judged the rewrites again ({{ gold | join(', ') }}). "
    "The test is the judge-level test of <code>interp intervene</code>: the judge's change of P(own) "
    "against its control "
    "judges' changes (Crawford-Howell), and the share of its DBG gap over them that the rewrite removes.</p>"
    "{{ dbg }}{% for v in verdicts %}<p class='note'>{{ v }}</p>{% endfor %}"
    "<h3>Does the rewrite keep the meaning?</h3><p>Cosine similarity of each original to its rewrite ({{ embedder }}; "
    'a proxy for the paper\'s gte embeddings); rewrites below {{ threshold }} are flagged. "unrelated": an '
    "original against "
    "another instruction's original of the same author, for scale.</p>{{ similarity }}"
    "<p><img src='{{ embedding }}' alt='originals and rewrites in 2-D'></p>"
    "{% if figure7 %}<h3>Figure 7 before and after</h3><p><img src='{{ figure7 }}' alt='Figure 7 before "
    "and after'></p>{% endif %}"
)


def project(vectors: np.ndarray, method: str = "auto", seed: int = 0) -> tuple[np.ndarray, str]:
    """2-D coordinates of `vectors` (rows) and the method used: t-SNE or PCA (scikit-learn); "auto": t-SNE from
    TSNE_MIN_POINTS points on, PCA below."""
    if method == "auto":
        method = "tsne" if len(vectors) >= TSNE_MIN_POINTS else "pca"
    if len(vectors) < 3:
        return np.zeros((len(vectors), 2)), "none (fewer than 3 texts)"
    if method == "tsne":
        from sklearn.manifold import TSNE

        perplexity = float(min(30.0, (len(vectors) - 1) / 3))
        return TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed).fit_transform(
            vectors
        ), "t-SNE"
    from sklearn.decomposition import PCA

    return PCA(n_components=2, random_state=seed).fit_transform(vectors), "PCA"


def embedding_figure(
    before: np.ndarray, after: np.ndarray, authors: Sequence[str], method: str = "auto"
) -> tuple[Figure, str]:
    """Originals and rewrites on one 2-D map (one projection of all texts), one panel per author."""
    coords, used = project(np.concatenate([before, after]), method)
    n = len(before)
    names = list(dict.fromkeys(authors))
    fig, axes = subplots(1, len(names), figsize=(4.6 * len(names), 4.0), squeeze=False)
    for ax, author in zip(axes[0], names, strict=False):
        rows = np.array([i for i, a in enumerate(authors) if a == author])
        ax.scatter(coords[rows, 0], coords[rows, 1], s=18, color="tab:blue", label="original")
        ax.scatter(coords[n + rows, 0], coords[n + rows, 1], s=18, color="tab:orange", marker="x", label="rewrite")
        ax.set_title(Path(author).name, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Originals and rewrites ({used} of mean-pooled hidden states)", fontsize=10)
    fig.tight_layout()
    return fig, used


def figure7_before_after(profiles: Sequence, source: Path) -> Figure:
    """Figure 7's own-minus-other attention per judge on relative depth: the source run (before) and the derived
    run (after) in one panel per judge."""
    judges = list(dict.fromkeys(p.judge for p in profiles))
    cols = min(len(judges), 3)
    rows = -(-len(judges) // cols)
    fig, axes = subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False, sharey=True)
    for ax, judge in zip(axes.flat, judges, strict=False):
        for profile in (p for p in profiles if p.judge == judge):
            before = Path(profile.run) == Path(source)
            ax.plot(
                profile.depth,
                profile.own_minus_other,
                marker=".",
                ls="-" if before else "--",
                color="tab:blue" if before else "tab:orange",
                label="before" if before else "after",
            )
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(Path(judge).name, fontsize=9)
        ax.set_xlabel("relative depth", fontsize=8)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(judges) :]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("attention to own - other answer", fontsize=8)
    fig.suptitle("Figure 7 before and after the rewrite: own minus other", fontsize=10)
    fig.tight_layout()
    return fig


def dbg_rows(result: RestyleResult, *, reasons: bool = True) -> list[list[str]]:
    """One row per judge; `reasons`: why a share or a verdict is missing, in its cell (the terminal prints them
    below its table instead)."""
    rows = []
    for judge, r in result.judges.items():
        share = r.share_removed
        missing_share = "n/a" + (f": {r.share_removed_reason}" if reasons else "")
        rows.append(
            [
                judge,
                f"{pts(r.dbg_before)} {pts_ci(r.dbg_before_ci)}",
                f"{pts(r.dbg_after)} {pts_ci(r.dbg_after_ci)}",
                pts(r.dbg_after - r.dbg_before),
                ", ".join(r.test.controls) or "none",
                missing_share if share is None else f"{pct(share.estimate)} [{pct(share.low)}, {pct(share.high)}]",
                p_value(r.p_value),
                {True: "yes", False: "no", None: "no verdict" + (f": {r.reason}" if reasons else "")}[r.causal],
            ]
        )
    return rows


DBG_HEADER = [
    "judge",
    "DBG before, pts [95% CI]",
    "DBG after",
    "change",
    "control judges",
    "share of the gap removed",
    "p",
    "causal",
]


def similarity_rows(result: RestyleResult) -> list[list[str]]:
    """One row per author: how close the rewrites stay to the originals."""
    return [
        [author, str(s.n), fixed(s.mean, 3), fixed(s.min, 3), fixed(s.unrelated_mean, 3), str(s.n_flagged)]
        for author, s in result.similarity.per_author.items()
    ]


SIMILARITY_HEADER = ["author", "answers", "mean cosine", "min", "unrelated (mean)", "flagged"]


def restyle_section(
    result: RestyleResult,
    source: Path,
    paths: RunDir,
    before: np.ndarray,
    after: np.ndarray,
    authors: Sequence[str],
    method: str = "auto",
) -> tuple[dict[str, Path], str]:
    """Write figures/restyle_embedding.png/.pdf, figures/restyle_figure7.png/.pdf (when both runs stored
    attention) and figures/restyle_section.html (title line + body); returns the figures' PNG paths and the
    2-D method used (`projection`)."""
    fig, used = embedding_figure(before, after, authors, method)
    files = {"embedding": save_figure(fig, paths.figures / "restyle_embedding")["png"]}
    profiles, without = own_minus_other_profiles([source, paths.root])
    if profiles and not without:
        files["figure7"] = save_figure(figure7_before_after(profiles, source), paths.figures / "restyle_figure7")["png"]
    restyle = result.restyle
    body = render(
        _SECTION,
        source_run=result.source_run,
        style=restyle.style,
        rewriter=restyle.rewriter,
        kind=restyle.kind,
        gold=result.gold_judges,
        dbg=table_html(DBG_HEADER, dbg_rows(result)),
        verdicts=[r.verdict for r in result.judges.values()],
        embedder=result.embedder.model,
        threshold=result.threshold,
        similarity=table_html(SIMILARITY_HEADER, similarity_rows(result)),
        embedding=png_data_uri(files["embedding"]),
        figure7=png_data_uri(files["figure7"]) if "figure7" in files else None,
    )
    atomic_write_text(paths.figures / "restyle_section.html", SECTION_TITLE + "\n" + body)
    return files, used


def print_restyle(result: RestyleResult, report: str | None = None, console=None) -> None:
    """DBG before and after per judge, and the similarity per author, as rich tables; then the derived run and
    its `report`."""
    from rich import box
    from rich.table import Table

    from interp.report.terminal import results_console

    console = console or results_console()
    for title, header, rows in (
        (
            f"DBG before and after the {result.restyle.style} rewrite (pts)",
            DBG_HEADER,
            dbg_rows(result, reasons=False),
        ),
        (
            f"Similarity of originals and rewrites (flagged below {result.threshold:g})",
            SIMILARITY_HEADER,
            similarity_rows(result),
        ),
    ):
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in header:
            table.add_column(name, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        if header is DBG_HEADER:
            judges = result.judges.values()
            notes = [f"no verdict: {r.reason}" for r in judges if r.reason]
            notes += [f"no share (n/a): {r.share_removed_reason}" for r in judges if r.share_removed_reason]
            for note in dict.fromkeys(notes):
                console.print(note, highlight=False, soft_wrap=True)
    console.print(f"derived run: {result.derived_run}  report: {report}", highlight=False, soft_wrap=True)
