"""`Judge`: a judge model in a notebook, strings in, tensors out (each method opens with an example).

A thin layer over the toolkit's own path, so a notebook's numbers are a run's numbers: the prompt and its
token spans are `interp.core.spans.build_judge_prompt`, the pass and its span attention are
`interp.core.judge.judge_batch`, and the open `applying` and `hooks` blocks are compiled for each pass into its one
edit set (`interp.api.judge_passes.pass_edit`, through `interp.hooks.node_data.interventions_builder`, the builder
every run uses), applied by hook handles that are gone when the pass ends.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import torch

from interp.api.argument_types import shown as _shown
from interp.api.argument_types import text_argument as _text
from interp.api.argument_types import text_list as _texts
from interp.api.arguments import Authors, author_rows, is_nnsight, model_name, per_row, refuse_unknown
from interp.api.judge_passes import pass_edit, reference_data
from interp.api.patterns import AttentionPatternView, viewed
from interp.api.verdicts import Verdict, Verdicts, verdict_of
from interp.core.attention import Readout
from interp.core.attention_pattern import attention_pattern
from interp.core.backends import AttnImplementation, Backend, is_backend, make_backend
from interp.core.backends.probe import check_intervention_takes_effect
from interp.core.judge import Judgment, judge_batch, label_tokens
from interp.core.models import Kind, LoadedModel, load_model, own_model, wrap_model
from interp.core.spans import TokenizedPrompt, build_judge_prompt, token_labels
from interp.errors import InterpError
from interp.hooks.base import HookFunctions, Intervention, qualified_name
from interp.hooks.nodes import NodeIntervention, as_intervention, validate_node
from interp.hooks.sites import check_hook_names, hook_names, shape_checked
from interp.hooks.spec import AttentionIntervention, validate_against


class Judge:
    """A judge model: call it on a query and two responses, read P(A), P(B) and its span attention.

    Build one with `Judge.load` (an alias, HF id, folder or .gguf file), `Judge.wrap` (a model you hold:
    a Hugging Face model and tokenizer, a `LoadedModel`, a backend, or an nnsight `LanguageModel`) or
    `Judge.from_nnsight`.

    Args:
        backend: the backend that runs the passes ("hf", "transformer_lens" or "nnsight"; see
            `interp.core.backends.make_backend`).
        own: the model whose answers are the judge's own: what `target="self"` masks and what
            `Verdict.p_own` reads. Defaults to `interp.core.models.own_model(name)` (an organism's own
            answers are its base model's).
        readout: the positions the span attention is read from: "final" (the verdict position) or "after"
            (every position after both responses); a run config's `attention` key. (`queries` is a spec's key:
            the positions a mask acts on.)
        batch_size: pairs per forward pass in `batch`.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        own: str | None = None,
        readout: Readout = "final",
        batch_size: int = 8,
        **unknown: Any,
    ):
        refuse_unknown(unknown)
        if readout not in ("final", "after"):
            raise InterpError(f"unknown readout {readout!r}; use 'final' or 'after'")
        if own is not None:
            _text(own, "own")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool):
            raise InterpError(
                f"batch_size must be an int (pairs per forward pass), not {type(batch_size).__name__} "
                f"{_shown(batch_size)}"
            )
        if batch_size < 1:
            raise InterpError(f"batch_size must be at least 1, not {batch_size}")
        check_intervention_takes_effect(backend)  # a model a mask cannot act on is refused here, in one line
        self.backend = backend
        self.own = own if own is not None else own_model(backend.model.name)
        self.readout: Readout = readout
        self.batch_size = batch_size
        self._labels = label_tokens(backend.model.tokenizer)
        self._active: list[AttentionIntervention | NodeIntervention] = []
        self._means: dict[int, dict] = {}  # a node spec's place in `_active` -> its reference means
        self._pools: dict[int, list] = {}  # a node spec's place in `_active` -> its reference prompts (donors)
        self._hooks: list[HookFunctions] = []  # the open `hooks` blocks
        self._nnsight: Any = None  # the LanguageModel of `trace`, made on first use

    # ---- building one -----------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        spec: str,
        *,
        backend: str = "hf",
        device: str = "auto",
        dtype: str | None = None,
        device_map: str | None = None,
        kind: Kind | None = None,
        attn_implementation: AttnImplementation = "sdpa",
        own: str | None = None,
        readout: Readout = "final",
        batch_size: int = 8,
        **unknown: Any,
    ) -> "Judge":
        """Load a judge model offline and wrap it in a backend.

        >>> judge = interp.Judge.load("smollm2-135m-judge")  # doctest: +SKIP
        >>> judge.backend.name, judge.readout
        ('hf', 'final')

        Args:
            spec: a model alias (`interp models`), an organism ("smollm2-135m-judge"), an HF id in the
                local cache, a model folder or a .gguf file.
            backend: "hf", "transformer_lens" or "nnsight".
            device: "cpu", "cuda", "cuda:N", "mps" or "auto".
            dtype: "float32", "bfloat16" or "float16" (default: float32 on the CPU, bfloat16 on a GPU).
            device_map: "auto" shards the model over every visible GPU.
            kind: "pre" (few-shot prompts) or "post" (chat template); default: guessed from the tokenizer.
            attn_implementation: "sdpa" (fast) or "eager" (the reference), for the hf and nnsight backends.
            own: the model whose answers are the judge's own (default: `own_model(spec)`).
            readout: "final" or "after", the positions the span attention is read from.
            batch_size: pairs per forward pass in `batch`.

        Returns:
            The judge.
        """
        refuse_unknown(unknown)
        spec = _text(str(spec) if isinstance(spec, Path) else spec, "spec (the model to load)")
        model = load_model(spec, kind=kind, device=device, dtype=dtype, device_map=device_map)
        return cls(
            make_backend(model, backend, attn_implementation=attn_implementation),
            own=own if own is not None else own_model(spec),  # the spec as given, as a run names its authors
            readout=readout,
            batch_size=batch_size,
        )

    @classmethod
    def wrap(
        cls,
        model: Any,
        tokenizer: Any = None,
        *,
        name: str | None = None,
        kind: Kind | None = None,
        backend: str | None = None,
        attn_implementation: AttnImplementation = "sdpa",
        **options: Any,
    ) -> "Judge":
        """A judge around a model you already hold, used in place (never copied or loaded again). Judging needs
        eval mode and a pad token: where your objects lack them they are set, with a warning that says so
        (`interp.core.models.wrap_model`).

        >>> model = interp.load_model("smollm2-135m-instruct")  # doctest: +SKIP
        >>> judge = interp.Judge.wrap(model.hf_model, model.tokenizer, name="my-judge")
        >>> judge.name, judge.own
        ('my-judge', 'my-judge')

        Args:
            model: a Hugging Face causal LM (then pass `tokenizer`), a `LoadedModel`, a backend from
                `make_backend`, or an nnsight `LanguageModel` (see `from_nnsight`).
            tokenizer: the tokenizer of a Hugging Face model.
            name: the judge's name (default: the model's folder or id); `own` defaults from it.
            kind: "pre" or "post" (default: "post" when the tokenizer has a chat template).
            backend: "hf" (default), "transformer_lens" or "nnsight"; an nnsight model uses "nnsight".
            attn_implementation: "sdpa" or "eager", for the hf and nnsight backends.
            **options: `own`, `readout`, `batch_size`, as `Judge(...)` takes them.

        Returns:
            The judge.
        """
        refuse_unknown({k: v for k, v in options.items() if k not in ("own", "readout", "batch_size")})
        if is_nnsight(model):
            return cls.from_nnsight(model, name=name, kind=kind, attn_implementation=attn_implementation, **options)
        if is_backend(model):
            return cls(model, **options)
        if isinstance(model, LoadedModel):
            loaded = model
        else:
            if tokenizer is None:
                raise InterpError(
                    "Judge.wrap needs the tokenizer of a Hugging Face model: Judge.wrap(model, tokenizer)"
                )
            loaded = wrap_model(model, tokenizer, name=name or model_name(model), kind=kind)
        return cls(make_backend(loaded, backend or "hf", attn_implementation=attn_implementation), **options)

    @classmethod
    def from_nnsight(
        cls,
        language_model: Any,
        *,
        name: str | None = None,
        kind: Kind | None = None,
        attn_implementation: AttnImplementation = "sdpa",
        **options: Any,
    ) -> "Judge":
        """A judge that runs its passes through your nnsight `LanguageModel` (traced, as `.trace` runs them).

        >>> from nnsight import LanguageModel
        >>> language_model = LanguageModel(model.hf_model, tokenizer=model.tokenizer)
        >>> interp.Judge.from_nnsight(language_model, name="traced").backend.name
        'nnsight'

        Args:
            language_model: an nnsight `LanguageModel` with its weights loaded (dispatched).
            name: the judge's name (default: the wrapped model's folder or id).
            kind: "pre" or "post" (default: "post" when the tokenizer has a chat template).
            attn_implementation: "sdpa" or "eager".
            **options: `own`, `readout`, `batch_size`, as `Judge(...)` takes them.

        Returns:
            The judge.
        """
        from interp.core.backends.nnsight import NNsightBackend

        hf_model = getattr(language_model, "_module", None) or getattr(language_model, "_model", None)
        tokenizer = getattr(language_model, "tokenizer", None)
        if not isinstance(hf_model, torch.nn.Module) or tokenizer is None:
            raise InterpError("from_nnsight needs an nnsight LanguageModel with a tokenizer")
        if any(p.is_meta for p in hf_model.parameters()):
            raise InterpError("this LanguageModel has no weights loaded yet; create it with dispatch=True")
        loaded = wrap_model(hf_model, tokenizer, name=name or model_name(hf_model), kind=kind)
        backend = NNsightBackend(loaded, language_model, hf_model, attn_implementation=attn_implementation)
        return cls(backend, **options)

    # ---- what it is -------------------------------------------------------------------------------

    @property
    def model(self) -> LoadedModel:
        """The loaded model (its HF module is `model.hf_model`, its tokenizer `model.tokenizer`)."""
        return self.backend.model

    @property
    def name(self) -> str:
        """The judge's name (the alias or folder it was loaded from)."""
        return self.model.name

    @property
    def n_layers(self) -> int:
        """Decoder layers: the `layer` dim of the span attention."""
        return self.model.n_layers

    @property
    def n_heads(self) -> int:
        """Attention heads per layer: the `head` dim of the span attention."""
        return self.model.n_heads

    @property
    def interventions(self) -> tuple[AttentionIntervention, ...]:
        """The intervention specs of the `applying` blocks open now, outermost first."""
        return tuple(self._active)

    @property
    def opened(self) -> tuple[Intervention, ...]:
        """Every open block as an intervention, outermost first: the `applying` specs, then the `hooks` blocks
        (`interp.hooks.base.HookFunctions`); what a study handed this judge runs in every judgment and keys by."""
        return (*self._active, *self._hooks)

    def __repr__(self) -> str:
        return (
            f"Judge({self.name!r}, backend={self.backend.name!r}, own={self.own!r}, {self.n_layers} layers x "
            f"{self.n_heads} heads, kind={self.model.kind!r})"
        )

    # ---- judging ----------------------------------------------------------------------------------

    def prompt(self, query: str, response_a: str, response_b: str, *, task: str = "helpfulness") -> TokenizedPrompt:
        """The tokenized judge prompt this judge reads (its text, input ids and token spans).

        >>> prompt = judge.prompt("What is 2 + 2?", "4", "5")
        >>> sorted(prompt.spans)
        ['a', 'b', 'query']
        """
        for value, what in ((query, "query"), (response_a, "response_a"), (response_b, "response_b"), (task, "task")):
            _text(value, what)
        return build_judge_prompt(self.model, task, query, response_a, response_b)

    def __call__(
        self,
        query: str | Sequence[str],
        response_a: str | Sequence[str],
        response_b: str | Sequence[str],
        *,
        task: str | Sequence[str] = "helpfulness",
        authors: Authors | Sequence[Authors] | None = None,
        own: str | None = None,
    ) -> Verdict | Verdicts:
        """Judge one pair (strings) or a batch (lists: the same as `batch`).

        >>> verdict = judge("What is 2 + 2?", "4", "5", authors=(judge.own, "someone-else"))
        >>> round(verdict.p_a + verdict.p_b, 6), tuple(verdict.mass.shape) == (judge.n_layers, judge.n_heads, 2)
        (1.0, True)

        Args:
            query: the instruction (German text for "translation").
            response_a: the response shown as A.
            response_b: the response shown as B.
            task: "helpfulness", "truthfulness" or "translation".
            authors: (author of A, author of B): needed by targets "self" and "other" and by `Verdict.p_own`.
            own: the model whose answers are the judge's own, for this call (default: `self.own`).

        Returns:
            A `Verdict` for strings, `Verdicts` for lists.
        """
        if isinstance(query, str):
            _text(response_a, "response_a")
            _text(response_b, "response_b")
            return self.batch([query], [response_a], [response_b], task=task, authors=authors, own=own)[0]
        if isinstance(query, (bytes, Mapping)) or not hasattr(query, "__iter__"):
            raise InterpError(
                "query must be a string (one pair) or a list of strings (a batch), not "
                f"{type(query).__name__} {_shown(query)}"
            )
        return self.batch(query, response_a, response_b, task=task, authors=authors, own=own)

    def batch(
        self,
        queries: Sequence[str],
        responses_a: Sequence[str],
        responses_b: Sequence[str],
        *,
        task: str | Sequence[str] = "helpfulness",
        authors: Authors | Sequence[Authors] | None = None,
        own: str | None = None,
    ) -> Verdicts:
        """Judge many pairs, `batch_size` per forward pass (left-padded: padding does not change results).

        >>> verdicts = judge.batch(["What is 2 + 2?", "What is 3 + 3?"], ["4", "6"], ["5", "7"])
        >>> len(verdicts)
        2

        Args:
            queries: one instruction per pair.
            responses_a: the A response of each pair.
            responses_b: the B response of each pair.
            task: one task for all pairs, or one per pair.
            authors: one (author A, author B) for all pairs, or one per pair.
            own: the model whose answers are the judge's own (default: `self.own`).

        Returns:
            The verdicts, in input order.
        """
        queries, responses_a, responses_b = (
            _texts(queries, "queries"),
            _texts(responses_a, "responses_a"),
            _texts(responses_b, "responses_b"),
        )
        if not isinstance(task, str):
            if isinstance(task, (bytes, Mapping)) or not hasattr(task, "__iter__"):
                raise InterpError(
                    "task must be a task name (a string) or a list of them, one per pair, not "
                    f"{type(task).__name__} {_shown(task)}"
                )
            task = _texts(task, "task")
        if own is not None:
            _text(own, "own")
        n = len(queries)
        if not n or len(responses_a) != n or len(responses_b) != n:
            raise InterpError(
                f"got {n} queries, {len(responses_a)} A responses and {len(responses_b)} B responses; pass "
                "one of each per pair"
            )
        tasks = per_row(task, n, "tasks")
        rows = author_rows(authors, n)
        own = own if own is not None else self.own
        prompts = [
            self.prompt(q, a, b, task=t) for q, a, b, t in zip(queries, responses_a, responses_b, tasks, strict=False)
        ]
        verdicts: list[Verdict] = []
        for start in range(0, n, self.batch_size):
            chunk = slice(start, start + self.batch_size)
            judgments = self._judge(prompts[chunk], rows[chunk], own)
            verdicts += [
                verdict_of(j, p, t, a, own, tuple(self._active))
                for j, p, t, a in zip(judgments, prompts[chunk], tasks[chunk], rows[chunk], strict=False)
            ]
        return Verdicts(tuple(verdicts))

    def _judge(self, prompts: list[TokenizedPrompt], authors: list[Authors | None], own: str) -> list[Judgment]:
        """One `judge_batch` pass under every open intervention and `hooks` block, compiled for these prompts into
        the pass's one edit set (hook handles, removed when the pass ends)."""
        hooks = [dict(block.functions) for block in self._hooks]
        edits = pass_edit(
            self.backend, self._active, hooks, own=own, authors=authors, means=self._means, pools=self._pools
        )
        return judge_batch(self.backend, prompts, self._labels, readout=self.readout, edits=edits)

    # ---- looking inside ---------------------------------------------------------------------------

    def attention_pattern(
        self,
        query: str,
        response_a: str,
        response_b: str,
        *,
        layers: Sequence[int] | int | None = None,
        heads: Sequence[int] | int | None = None,
        task: str = "helpfulness",
        authors: Authors | None = None,
        own: str | None = None,
    ) -> AttentionPatternView:
        """One judgment's full attention pattern at the chosen layers and heads, with token labels and spans.

        >>> pattern = judge.attention_pattern("What is 2 + 2?", "4", "5", layers=[0], heads=[0, 1])
        >>> pattern.pattern.shape[:2]  # Float[Tensor, "layer head query key"]
        torch.Size([1, 2])
        >>> figure = pattern.figure()  # interactive plotly heatmaps, the spans boxed

        Computed by the judge's own backend pass, under any `applying` block that is open.

        Args:
            query: the instruction.
            response_a: the response shown as A.
            response_b: the response shown as B.
            layers: layer numbers (one, a list, or None for all).
            heads: head numbers (one, a list, or None for all).
            task: "helpfulness", "truthfulness" or "translation".
            authors: (author of A, author of B), for an open intervention whose target is "self" or "other".
            own: the model whose answers are the judge's own (default: `self.own`).

        Returns:
            An `interp.api.patterns.AttentionPatternView` (an `interp.core.attention_pattern.AttentionPattern`).
        """
        prompt = self.prompt(query, response_a, response_b, task=task)
        own = own if own is not None else self.own
        edits = pass_edit(
            self.backend,
            self._active,
            (),
            own=own,
            authors=[tuple(authors) if authors is not None else None],
            means=self._means,
            pools=self._pools,
        )
        return viewed(attention_pattern(self.backend, prompt, layers=layers, heads=heads, edits=edits))

    @property
    def nnsight(self) -> Any:
        """The nnsight `LanguageModel` over this judge's model (the one it runs on with the nnsight backend; else
        one over a weight-sharing copy, made on first use, so the model object stays as it is)."""
        from interp.core.backends.nnsight import NNsightBackend

        if isinstance(self.backend, NNsightBackend):
            return self.backend.wrapped
        if self._nnsight is None:
            self._nnsight = NNsightBackend.boot(self.model).wrapped
        return self._nnsight

    def trace(self, query: str, response_a: str, response_b: str, *, task: str = "helpfulness", **options: Any) -> Any:
        """An nnsight tracing context over the judge prompt of this pair, with its token spans known.

        >>> with judge.trace("What is 2 + 2?", "4", "5") as tracer:
        ...     logits = judge.nnsight.output.logits.save()  # or judge.nnsight.model.layers[1].output.save()
        >>> a_start, a_end = tracer.spans["a"]  # token spans: "query", "a", "b" -> (start, end)
        >>> logits[0, a_start:a_end].shape[0] == a_end - a_start
        True

        The tracer is nnsight's own (`judge.nnsight.trace(...)`) on the prompt `judge.prompt(...)` builds, one
        row without padding; it carries `tracer.prompt` (the `TokenizedPrompt`), `tracer.spans` and
        `tracer.tokens` (a label per token). It runs the plain model: inside `judge.applying` it is refused
        (edit the model inside the trace instead, as nnsight does).

        Args:
            query: the instruction.
            response_a: the response shown as A.
            response_b: the response shown as B.
            task: "helpfulness", "truthfulness" or "translation".
            **options: passed to nnsight's `trace`.

        Returns:
            nnsight's tracer, to enter with `with`.
        """
        if self._active:
            raise InterpError(
                "judge.trace runs the plain model, not under judge.applying: leave the applying block, or "
                "edit the model inside the trace"
            )
        prompt = self.prompt(query, response_a, response_b, task=task)
        ids = torch.tensor([list(prompt.input_ids)], device=self.model.device)
        tracer = self.nnsight.trace({"input_ids": ids, "attention_mask": torch.ones_like(ids)}, **options)
        tracer.prompt, tracer.spans = prompt, dict(prompt.spans)
        tracer.tokens = token_labels(self.model.tokenizer, prompt.input_ids)
        return tracer

    # ---- interventions ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def applying(
        self,
        /,
        spec: AttentionIntervention | NodeIntervention | Mapping[str, Any] | str | Path | None = None,
        *,
        reference: Any = None,
        **keys: Any,
    ) -> Iterator[AttentionIntervention | NodeIntervention]:
        """Judge under an intervention for the duration of a `with` block: an attention spec (a mask) or a node
        spec (`site="head_output" | "mlp_output" | "residual"`, `op="zero" | "mean" | ...`, `interp.hooks.nodes`):

        >>> with judge.applying(target="self", alpha=0.0, layers=[0, 1]) as spec:
        ...     masked = judge("What is 2 + 2?", "4", "5", authors=(judge.own, "gemma3-270m"))
        >>> spec.alpha, len(masked.interventions)
        (0.0, 1)
        >>> with judge.applying(site="head_output", op="mean", layers=[1], heads=[3], reference=run):  # doctest: +SKIP
        ...     masked = judge("What is 2 + 2?", "4", "5", authors=(judge.own, "gemma3-270m"))

        `reference`: for `mean` and `resample`, the prompts the means or donors come from: a run (its items in
        both orders, as `interp intervene` uses without a selection split) or a list of pairs.

        Every call inside the block compiles the spec against that call's prompts and authors (target
        "self" is the slot written by `judge.own`) and applies it by hook handles removed after each pass
        (`interp.api.judge_passes.pass_edit`); leaving the block (also by an exception) drops the spec.
        Blocks nest: the inner pass runs under both specs.

        Args:
            spec: an `AttentionIntervention`, a table of its keys, or a TOML file; or leave it out and
                pass the keys: `target` ("self", "other", "a", "b", "both", "random" or (start, end)),
                `alpha` (0 masks; 1 changes nothing), `layers`, `heads`, `queries`, `seed`, `name`.
            **keys: spec keys (they replace the spec's when both are given).

        Yields:
            The spec, validated against this model's layers and heads.
        """
        spec = as_intervention(spec, **keys)
        depth = len(self._active)
        means, pool = None, None
        if isinstance(spec, NodeIntervention):
            validate_node(spec, self.n_layers, self.n_heads)
            check_hook_names(self.model.hf_model, spec.hook_names(self.n_layers))
            if spec.needs in ("mean", "donor"):
                means, pool = reference_data(
                    self.backend, spec, reference, self.prompt, own=self.own, batch_size=self.batch_size
                )
        else:
            validate_against(spec, self.n_layers, self.n_heads)
        if reference is not None and not (isinstance(spec, NodeIntervention) and spec.needs in ("mean", "donor")):
            raise InterpError(
                "reference= gives a mean ablation its means, or resample its donors; this spec reads neither"
            )
        # kept under the block's depth: a nested block (one spec object too) reads its own, the outer's stay
        self._means |= {depth: means} if means is not None else {}
        self._pools |= {depth: pool} if pool is not None else {}
        self._active.append(spec)
        try:
            yield spec
        finally:
            del self._active[depth:]
            self._means, self._pools = ({k: v for k, v in t.items() if k < depth} for t in (self._means, self._pools))

    @contextlib.contextmanager
    def hooks(self, functions: Mapping[str, Any], *, key: str | None = None) -> Iterator[None]:
        """Run your functions at named hook points during every judgment in the block (TransformerLens'
        `run_with_hooks`, baukit's `Trace`):

        >>> kept = {}
        >>> with judge.hooks({"blocks.1.attn.hook_z": lambda z: kept.update(z=z.clone())}):
        ...     verdict = judge("What is 2 + 2?", "4", "5")
        >>> kept["z"].shape[2] == judge.n_heads
        True

        A function gets the activation (`hook_z`: [batch, pos, head, d_head]; the others [batch, pos, d_model])
        and returns a tensor of the same shape to replace it, or None to leave it (any other return is refused
        in one line naming the point and both shapes). The names are
        `judge.hook_names()` (`interp.hooks.sites`); every backend runs them, through forward-hook handles that
        are gone after each pass, so the model is as it was on exit, on errors too.

        A study handed the judge inside the block (`interp.intervene(run, judges=[judge])`, `interp.sweep`) runs
        the functions in every judgment it makes. What it stores is keyed by each function's qualified name and
        `key`, your promise that the same key means the same functions (give `key="add-0.5"` to resume a killed
        study or reuse its judgments); without `key` the block's judgments are keyed afresh, never reused."""
        if not isinstance(functions, Mapping) or not all(
            isinstance(k, str) and callable(v) for k, v in functions.items()
        ):
            raise InterpError("hooks() takes a mapping of hook point name -> function (see judge.hook_names())")
        check_hook_names(self.model.hf_model, functions)
        if key is not None:
            _text(key, "key")
        block = HookFunctions(
            tuple((name, shape_checked(name, fn)) for name, fn in functions.items()),
            key=key if key is not None else f"unkeyed-{uuid.uuid4().hex}",
            names=tuple(qualified_name(fn) for fn in functions.values()),
        )
        depth = len(self._hooks)
        self._hooks.append(block)
        try:
            yield
        finally:
            del self._hooks[depth:]

    def hook_names(self) -> list[str]:
        """The hook point names this judge's model offers (`interp.hooks.sites`), layer by layer.

        >>> judge.hook_names()[0]
        'blocks.0.hook_resid_pre'
        """
        return hook_names(self.model.hf_model)
