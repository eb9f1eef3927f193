"""Configs: strict pydantic schemas read from and written to TOML, the first problem as one line.

Every config the toolkit reads lives here (a run, its gold judges, an ablation sweep, a steering sweep), so
there is one way to read (`load_toml_config`), validate (`validate_config`) and write (`to_toml`) them.
Unknown keys are errors: a typo never silently falls back to a default. Values are checked strictly: a
string where a number or a flag is expected (`share = "0.5"`) is refused, never converted; an integer where
a float is expected (`alpha = 0`) is a number and fine. A list where a count of things is expected must
not be empty.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal, get_args

import tomli_w
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from interp.errors import InterpError

BackendName = Literal["hf", "transformer_lens", "nnsight"]
BACKENDS: tuple[str, ...] = get_args(BackendName)


class Strict(BaseModel):
    """A frozen config that refuses unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_toml(self) -> str:
        """The config as TOML text (unset keys left out)."""
        return to_toml(self.model_dump(exclude_none=True))


def to_toml(data: dict) -> str:
    """TOML text of plain data (None values must already be left out: TOML has no null)."""
    return tomli_w.dumps(data)


def _json_value(value):
    """TOML's dates and times have no JSON form: an object no field accepts, so the key is named as wrong."""
    return {"a TOML date or time": str(value)}


def validate_config(model: type[BaseModel], data: dict, source: str):
    """A pydantic config from parsed data (TOML, a dict), validated strictly (pydantic's strict mode, on the
    data's JSON form: arrays fill tuples, integers fill floats, nothing else is converted); the first problem
    as one line naming the key."""
    try:
        return model.model_validate_json(json.dumps(data, default=_json_value), strict=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"].removeprefix("Value error, ")
        raise InterpError(f"{source}: {where}: {message}" if where else f"{source}: {message}") from None


def _read_text(path: Path, what: str) -> str:
    """A file's UTF-8 text; missing, unreadable or non-UTF-8 is a one-line InterpError."""
    if not path.is_file():
        raise InterpError(f"{what} not found: {path}")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InterpError(f"{path}: not UTF-8 text; save the {what} as UTF-8") from None
    except OSError as exc:
        raise InterpError(f"{path}: cannot read the {what} ({exc.strerror})") from None


def read_toml(path: Path, what: str = "config file") -> dict:
    """Parsed TOML of a file; missing, unreadable, non-UTF-8 or invalid TOML is a one-line InterpError."""
    path = Path(path)
    text = _read_text(path, what)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InterpError(f"{path}: not valid TOML ({exc})") from None


def read_toml_or_json(path: Path, what: str) -> dict:
    """A table of keys from a TOML or a JSON file: JSON when the file is named .json or its text opens with "{"
    (no TOML document does), else TOML. A missing or bad file, or JSON that is not an object, is one line."""
    path = Path(path)
    text = _read_text(path, what)
    if path.suffix.lower() != ".json" and not text.lstrip().startswith("{"):
        return read_toml(path, what)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InterpError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise InterpError(f"{path}: the {what} must be a JSON object of keys, not {type(data).__name__}")
    return data


def load_toml_config(path: Path, model: type[BaseModel], what: str = "config file"):
    """Read a TOML file into `model`; a missing file, bad TOML or a bad key is a one-line InterpError."""
    return validate_config(model, read_toml(path, what), str(path))


DTYPE_NAMES = ("float32", "bfloat16", "float16")
DEVICE_PATTERN = re.compile(r"^(cpu|cuda(:\d+)?|mps|auto)$")


def placement_key_problem(device: str, dtype: str | None, device_map: str | None) -> str | None:
    """What is wrong with the spelling of the placement keys (hardware is checked when a model loads)."""
    if not DEVICE_PATTERN.match(device):
        return f"unknown device {device!r}; use cpu, cuda, cuda:N, mps or auto"
    if dtype is not None and dtype not in DTYPE_NAMES:
        return f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_NAMES)}"
    if device_map is not None and device_map != "auto":
        return f'unknown device_map {device_map!r}; use "auto" (shard over every visible GPU) or leave it out'
    return None


class PlacementKeys(Strict):
    """Where the job's local models run: `device` (cpu, cuda, cuda:N, mps, auto), `dtype` (float32, bfloat16,
    float16; default float32 on the CPU, bfloat16 on a GPU) and `device_map = "auto"` (shard over GPUs)."""

    device: str = "auto"
    dtype: str | None = None
    device_map: str | None = None

    @model_validator(mode="after")
    def _check_placement(self):
        problem = placement_key_problem(self.device, self.dtype, self.device_map)
        if problem:
            raise ValueError(problem)
        return self


def backend_placement_problem(backend: str | None, device_map: str | None) -> str | None:
    """Why this backend cannot run with this `device_map` (None: it can)."""
    if backend == "transformer_lens" and device_map is not None:
        return (
            'the transformer_lens backend runs a model on one device and cannot honour device_map = "auto"; '
            'use backend "hf" or "nnsight" for a sharded model, or one device'
        )
    return None


def _known_backend(value: str | None) -> str | None:
    if value is not None and value not in BACKENDS:
        raise ValueError(f"unknown backend {value!r}; use one of {', '.join(BACKENDS)}")
    return value


# ---- a DBG run ---------------------------------------------------------------------------------------


class HTTPJudgeConfig(Strict):
    """A judge behind an OpenAI-compatible endpoint. `base_url`, `api_key_env`, `timeout`, `retries` and
    `concurrency` say where and how to reach it, not what it judges: they may change between resumes."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None  # name of the environment variable holding the key; never the key
    timeout: float = Field(60.0, gt=0)
    retries: int = Field(4, ge=0)
    mode: Literal["chat", "completions"] = "chat"  # completions: raw few-shot prompt, for base models
    top_logprobs: int = Field(20, ge=1)
    concurrency: int = Field(1, ge=1)
    logprobs: bool = True


HTTP_LOCATION_KEYS = ("base_url", "api_key_env", "timeout", "retries", "concurrency")
# Run keys added after runs were made: at these values a run's identity (and resumability) is what it was.
NEW_KEY_DEFAULTS = {"grader": "none", "mode": "pairwise", "cot": "none", "relatedness": [], "answers": "control"}


RELATEDNESS_TYPES = ("same", "inheritance", "family", "unrelated")


class Relatedness(Strict):
    """How a judge is related to an answer's author (Preference Leakage, seed 004 section 3): the same model,
    inheritance (one trained on the other's synthetic data), the same family, or unrelated."""

    judge: str
    author: str
    type: Literal["same", "inheritance", "family", "unrelated"]


class GoldConfig(Strict):
    """A run's gold judges: the reference answers, local model judges, HTTP judges, recorded verdicts, and human
    labels that check them."""

    reference: bool = True
    models: list[str] = Field(default_factory=list)  # local model judges outside the pair
    http: list[HTTPJudgeConfig] = Field(default_factory=list)
    recorded: list[str] = Field(default_factory=list)
    human: str | None = None  # human preference labels that check gold, never make it (Table 1; interp.run.gold.human)


class RunConfig(PlacementKeys):
    """A DBG run, as its TOML gives it: the data, the two authors, the judges, decoding, gold, and where the models
    run."""

    name: str = "dbg"
    data: str = "builtin"
    n: int = Field(500, ge=1)  # the paper samples 500 instructions
    seed: int = 0
    models: tuple[str, str] = ("smollm2-135m-instruct", "gemma3-270m")
    judges: list[str] | None = Field(None, min_length=1)  # default: both models judge
    backend: str = "hf"
    batch_size: int = Field(8, ge=1)  # judged pairs per forward pass
    # answers per `generate` call: a greedy answer does not depend on it (left padding), and generating on a CPU
    # is bound by reading the weights once per token, so 24 rows cost little more than 8 (`interp.run.responses`)
    generation_batch_size: int = Field(24, ge=1)
    max_words: int = Field(200, ge=1)
    max_new_tokens: int = Field(256, ge=1)
    ties: bool = False  # A/T/B labels instead of A/B
    attention: Literal["final", "after", "none"] = "final"
    n_boot: int = Field(1000, ge=10)
    gold: GoldConfig = GoldConfig()
    # An empty or white-space answer: "refuse" the run before any judging (naming the model and the items), or
    # "judge" it as it is (an empty span; a model that says nothing should lose), counted in summary.json.
    empty_answers: Literal["refuse", "judge"] = "refuse"
    # A name in `models`/`judges` that is a server's name is that OpenAI-compatible endpoint (answers and
    # DBG judging, no attention); a name in `imports` has its answers read from that file (it cannot judge).
    servers: list[HTTPJudgeConfig] = Field(default_factory=list)
    imports: dict[str, str] = Field(default_factory=dict)
    # Chen et al.'s verifiable graders over the run's answers (`interp.run.correctness`): "math" and "choice"
    # compare with each item's `reference`, "code" runs the answer against the item's `tests` in the sandbox;
    # they write correctness.jsonl, from which `interp metrics run` gives SPR/JA/LSPR/HSPP.
    grader: Literal["none", "math", "choice", "code"] = "none"
    # "pointwise": SALIERI's 1-5 rubric judging of each answer alone (`interp.run.pointwise`) instead of pairs.
    mode: Literal["pairwise", "pointwise"] = "pairwise"
    # Judge-side chain of thought before a pairwise verdict (Chen et al. section 5): "standard" asks for
    # step-by-step reasoning, "long" for a long one (a reasoning model's); `interp.run.rationale`.
    cot: Literal["none", "standard", "long"] = "none"
    max_rationale_tokens: int | None = Field(None, ge=1)  # default: 256 (pointwise feedback, standard), 2048 (long)
    salieri_reference: str | None = None  # the reference agent of SALIERI: a judge that wrote no answer
    # SALIERI's chapter-4 "treatment": the models are asked to answer incorrectly (`interp.core.prompts.TREATMENT`);
    # a control run and a treatment run of the same config compare the bias on answers of two qualities.
    answers: Literal["control", "treatment"] = "control"
    # Preference Leakage: (judge, author) pairs and how they are related; undeclared pairs are "same" when the
    # judge's own model is the author, else "unrelated". The PLS lens groups by it (`interp.analysis.lenses`).
    relatedness: list[Relatedness] = Field(default_factory=list)

    _check_backend = field_validator("backend")(_known_backend)

    @model_validator(mode="after")
    def _sources_are_models(self):
        if self.models[0] == self.models[1]:
            raise ValueError(f"models names {self.models[0]!r} twice; a pair needs two different authors")
        names = [server.name for server in self.servers]
        if len(set(names)) != len(names):
            raise ValueError("two servers share a name")
        for name in list(self.imports) + names:
            if name not in self.models and name not in (self.judges or []):
                raise ValueError(f"{name!r} (a server or an imported model) is neither one of the models nor a judge")
        both = set(self.imports) & set(names)
        if both:
            raise ValueError(f"{sorted(both)[0]!r} is both imported and served; keep one")
        unable = [j for j in self.judges or [] if j in self.imports]
        if unable:
            raise ValueError(f"{unable[0]!r} has imported answers but no weights or server to judge with")
        return self

    @model_validator(mode="after")
    def _judging_modes_fit(self):
        if self.mode == "pointwise" and (self.ties or self.cot != "none"):
            raise ValueError(
                'mode = "pointwise" scores one answer 1-5 after its own feedback: leave ties and cot at their defaults'
            )
        if (self.mode == "pointwise" or self.cot != "none") and any(self.server(j) for j in self.judge_specs):
            raise ValueError(
                "a judge behind a server gives a verdict only: pointwise and cot judging need local judges"
            )
        if self.answers == "treatment" and (self.imports or self.servers):
            raise ValueError(
                'answers = "treatment" asks local models for degraded answers: imported and served answers '
                "cannot be treated"
            )
        if self.salieri_reference is not None and self.salieri_reference not in self.judge_specs:
            raise ValueError(f"salieri_reference {self.salieri_reference!r} is not one of the run's judges")
        self._relatedness_fits()
        if self.salieri_reference in self.models:
            raise ValueError(
                f"salieri_reference {self.salieri_reference!r} wrote answers of the run; the reference agent must not"
            )
        return self

    def _relatedness_fits(self) -> None:
        """Each declared pair names a judge and an author of the run, once, and a judge is the same as itself."""
        types: dict[tuple[str, str], str] = {}
        for pair in self.relatedness:
            if pair.judge not in self.judge_specs or pair.author not in self.models:
                raise ValueError(
                    f"relatedness names {pair.judge!r} -> {pair.author!r}: the judge must be a judge of the "
                    "run, the author one of its models"
                )
            if pair.judge == pair.author and pair.type != "same":
                raise ValueError(
                    f"relatedness declares {pair.judge!r} {pair.type!r} to itself: a judge is the same model as "
                    'itself; drop the pair or use type "same"'
                )
            seen = types.setdefault((pair.judge, pair.author), pair.type)
            if seen != pair.type:
                raise ValueError(
                    f"relatedness declares {pair.judge!r} -> {pair.author!r} twice, as {seen!r} and {pair.type!r}; "
                    "keep one"
                )

    @property
    def rationale_tokens(self) -> int:
        """Tokens a judge may write before its verdict (pointwise feedback, chain of thought)."""
        return self.max_rationale_tokens or (2048 if self.cot == "long" else 256)

    def server(self, name: str) -> HTTPJudgeConfig | None:
        """The server that runs judge `name` (None: it runs locally)."""
        return next((server for server in self.servers if server.name == name), None)

    @model_validator(mode="after")
    def _backend_can_place(self):
        problem = backend_placement_problem(self.backend, self.device_map)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def judge_specs(self) -> list[str]:
        """The judges: those given, or every model that can judge (imported answers cannot)."""
        return list(self.judges) if self.judges is not None else [m for m in self.models if m not in self.imports]

    def identity(self) -> dict:
        """What determines the run's results: the config without where its models and HTTP judges live.

        The dtype stays (a run records the dtype it was judged in; none recorded: an older run, float32)."""
        data = self.model_dump(exclude_none=True)
        data.pop("device")
        data.pop("device_map", None)
        data["dtype"] = self.dtype or "float32"
        for judge in data["gold"]["http"] + data["servers"]:
            for key in HTTP_LOCATION_KEYS:
                judge.pop(key, None)
        if not data["servers"]:
            data.pop("servers")
        if not data["imports"]:
            data.pop("imports")
        if data["empty_answers"] == "refuse":  # the default: runs made before the option keep their identity
            data.pop("empty_answers")
        for key, default in NEW_KEY_DEFAULTS.items():  # keys added later, at their defaults: the same identity
            if data.get(key) == default:
                data.pop(key)
        return data

    def identity_hash(self) -> str:
        """A hash of `identity()`: what a run directory records apart from its editable config.toml."""
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True, default=str).encode()).hexdigest()[:24]


def load_run_config(path: Path) -> RunConfig:
    """The run config of a TOML file, refused in one line where it is not one."""
    return load_toml_config(path, RunConfig)


def run_config_from_dict(data: dict, source: str = "config") -> RunConfig:
    """The run config of a TOML file's keys given as a dict (`source` names it in errors)."""
    return validate_config(RunConfig, data, source)


# ---- sweeps over a finished run ----------------------------------------------------------------------


class LayerAxes(Strict):
    """A sweep's layer points: each layer alone (`each`), and layer bands (first, last)."""

    each: bool = False
    bands: list[tuple[int, int]] = Field(default_factory=list)


class HeadAxes(Strict):
    """A sweep's head points: the top k heads, and random head sets of the same size (one per seed)."""

    top_k: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list)
    random_seeds: list[int] = Field(default_factory=list)


class JobKeys(Strict):
    """How a job over a finished run runs, never what it finds (not part of any result's key): `executor`
    (`local`: in this process; `ray`: Ray tasks, `interp.engine.executor`) and `max_memory`, the GB of
    judge models held at once before a judge whose work is done is let go (None: half the memory available)."""

    executor: Literal["local", "ray"] = "local"
    max_memory: float | None = Field(None, ge=0, allow_inf_nan=False)

    @property
    def max_memory_bytes(self) -> int | None:
        """`max_memory` in bytes (None: the default, half the memory available)."""
        return gb_bytes(self.max_memory)


def gb_bytes(gb: float | None) -> int | None:
    """GB (2**30 bytes, as `--max-memory` and `max_memory` are given) in bytes; None stays None. An infinite or
    NaN count (`--max-memory inf`) is one line: a budget is a finite number of GB."""
    if gb is None:
        return None
    if not math.isfinite(gb):
        raise InterpError(f"max_memory must be a finite number of GB (or left out for the default), not {gb}")
    return int(gb * 2**30)


class SweepConfig(PlacementKeys, JobKeys):
    """An ablation sweep: attention interventions over layers, bands, head sets, alphas and targets."""

    run: str
    name: str = "sweep"  # a label, in the results folder's name (`interp.storage.path_label`)
    judges: list[str] | None = Field(None, min_length=1)
    targets: list[str] = Field(default_factory=lambda: ["self"], min_length=1)
    alphas: list[float] = Field(default_factory=lambda: [0.0], min_length=1)
    queries: str = "outside"
    layers: LayerAxes = LayerAxes()
    heads: HeadAxes = HeadAxes()
    all_layers: bool = False  # also one point on every layer and head
    backend: str | None = None
    # Node interventions (`interp.hooks.nodes`): "attention" is the mask/dampen of targets x alphas above;
    # head_output, mlp_output and residual take every op x position below at the same layer and head points.
    sites: list[str] = Field(default_factory=lambda: ["attention"], min_length=1)
    ops: list[str] = Field(default_factory=lambda: ["zero"], min_length=1)
    positions: list[str] = Field(default_factory=lambda: ["all"], min_length=1)

    _check_backend = field_validator("backend")(_known_backend)


class SteeringSweepConfig(PlacementKeys, JobKeys):
    """A steering sweep: coefficients x layers of residual steering along a self-recognition direction."""

    run: str
    name: str = "steering"  # a label, in the results folder's name (`interp.storage.path_label`)
    judges: list[str] | None = Field(None, min_length=1)
    position: Literal["spans", "final"] = "spans"  # how the direction is computed
    positions: Literal["all", "spans", "final"] = "all"  # where the edit is applied
    coefficients: list[float] = Field(default_factory=lambda: [-2.0, -1.0, -0.5, 0.5, 1.0])  # add mode, x norm
    project_out: bool = True  # also one removal point per layer
    layers: list[int] | None = Field(None, min_length=1)
    layer_fractions: list[float] = Field(
        default_factory=lambda: [0.25, 0.5, 0.75], min_length=1
    )  # used when layers is omitted
    train_fraction: float = 0.7
    seed: int = 0
    backend: str | None = None

    _check_backend = field_validator("backend")(_known_backend)
