"""The bookkeeping files of a run directory (`interp.run.store`), one model each: what a resumed run, a re-judging
or the summary checks the run against.

- `RunIdentity`: `identity.json`, the hash of the config as run (`RunConfig.identity_hash`);
- `AdapterFingerprints`: `adapters.json`, model spec -> fingerprint of the adapter weights it loaded;
- `JudgePrompts`: `prompts.json`, per local judge what it reads (`judging.judge_prompt_record`);
- `GoldChecks`: `gold_checks.json`, per gold judge that counts them, what went wrong while judging;
- `AttentionIndex`: an attention store's index (`attention/<judge>-<hash>.json`, pairwise or pointwise).

A file written before its schema version held the map itself at the top level (migrated by the codec).
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from interp.results.base import ResultModel


class RunIdentity(ResultModel):
    """`identity.json`: the hash of the config the run was made under, checked on resume."""

    schema_version: int = 1
    config_identity: str


class AdapterFingerprints(ResultModel):
    """`adapters.json`: model spec -> fingerprint of the adapter weights it loaded (empty: no model loads one), and
    `weights`: model spec -> content key of the files a folder or .gguf spec names (`interp.core.model_files`; a
    run written before it has none, and is checked from its next resume on)."""

    schema_version: int = 1
    fingerprints: dict[str, str] = Field(default_factory=dict)
    weights: dict[str, str] = Field(default_factory=dict)


class JudgePrompts(ResultModel):
    """`prompts.json`: judge -> what it reads in this run (its prompt per task, style and labels)."""

    schema_version: int = 1
    judges: dict[str, dict] = Field(default_factory=dict)


class GoldChecks(ResultModel):
    """`gold_checks.json`: gold judge -> its counters (an HTTP judge's missing logprobs and non-label tokens)."""

    schema_version: int = 1
    judges: dict[str, dict] = Field(default_factory=dict)


class AttentionIndex(ResultModel):
    """An attention store's index (`attention/<judge>-<hash>.json`, and `.pointwise.json` of a pointwise run): whose
    attention, read where (`readout`), with which tokenizer and shape, the array's dims and, per item, what the
    judge read (pairwise: per order the answers' authors, spans and token count; pointwise: the item ids, with the
    authors beside them). A file written before its schema version may name the read-out `queries`, or none (read
    at the final position)."""

    schema_version: int = 1
    judge: Optional[str] = None  # an index written before judges' files were keyed by name may name none
    readout: str = "final"
    tokenizer: Optional[str] = None
    n_layers: int
    n_heads: int
    dims: list[str] = Field(default_factory=list)
    orders: Optional[list[str]] = None
    spans: Optional[list[str]] = None
    authors: Optional[list[str]] = None
    items: list[Any] = Field(default_factory=list)
