"""Every tensor the toolkit creates lives on the device of the layer that uses it.

A CPU-only machine has no second real device, so the model is moved to PyTorch's `meta` device (shapes,
no values) and the whole judge pass runs under `DeviceAudit`, a dispatch mode that fails any operation
whose tensors sit on two devices. The audit is needed: the meta device alone lets some mixes through
(a CPU @ meta matmul runs silently, `test_the_audit_catches_what_meta_alone_misses` shows it), and a GPU
would not (it raises "Expected all tensors to be on the same device"). 0-dim CPU tensors are allowed, as
CUDA allows them. Results come back to the CPU through `to_host`, which turns a meta tensor into zeros, so
the pass goes end to end.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from interp.core.attention import span_reducer
from interp.core.backends import make_backend
from interp.core.judge import judge_batch, label_tokens
from interp.core.models import LoadedModel
from interp.core.placement import DRY_RUN
from interp.core.spans import build_judge_prompt
from interp.hooks.compile import bias_builder
from interp.hooks.context import dampen
from interp.hooks.emphasis import emphasis_spec
from interp.hooks.spec import AttentionIntervention
from interp.hooks.steering import ResidualSteering

PAIRS = [("What is 2+2?", "It is 4.", "Five, I think."), ("Name a colour.", "Blue is a colour that many like.", "Red.")]


class StrayTensor(AssertionError):
    pass


class DeviceAudit(TorchDispatchMode):
    """Fail any op whose tensor arguments are on more than one device (0-dim CPU scalars aside)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        devices = {
            t.device
            for t in tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0)
        }
        if len(devices) > 1:
            raise StrayTensor(f"{func}: tensors on {sorted(str(d) for d in devices)}")
        return func(*args, **kwargs)


@pytest.fixture
def on_meta(monkeypatch):
    """`on_meta(model)`: a copy of the model on the meta device. transformers' SDPA mask asks whether the
    padding mask is all ones (a value meta tensors do not have); say no, so the mask is always built."""
    import transformers.masking_utils as masking

    monkeypatch.setattr(masking, "_ignore_causal_mask_sdpa", lambda *a, **k: False)

    def move(model: LoadedModel) -> LoadedModel:
        meta = {**model.meta, DRY_RUN: True}  # a dry run on purpose: weights with no values are allowed
        return dataclasses.replace(model, hf_model=copy.deepcopy(model.hf_model).to("meta"), meta=meta)

    return move


def prompts_for(model: LoadedModel):
    return [build_judge_prompt(model, "helpfulness", *pair) for pair in PAIRS]


AUTHORS = [("judge-model", "other-model"), ("other-model", "judge-model")]
SPECS = {
    "mask a": AttentionIntervention(target="a", alpha=0.0),
    "dampen self, final query, some heads": AttentionIntervention(
        target="self", alpha=0.3, heads=(0, 1), queries="final"
    ),
    "other, one layer": AttentionIntervention(target="other", alpha=0.0, layers=(1,)),
    "random span": AttentionIntervention(target="random", alpha=0.0, seed=3),
    "explicit span": AttentionIntervention(target=(2, 5), alpha=0.5),
    "emphasis": emphasis_spec(4.0),
}


def judge_on(backend, model, *, readout="final", bias=None, edit=None):
    return judge_batch(
        backend, prompts_for(model), label_tokens(model.tokenizer), readout=readout, bias=bias, edit=edit
    )


@pytest.mark.parametrize("backend_name", ["hf", "nnsight", "transformer_lens"])
@pytest.mark.parametrize("name", ["tiny_llama", "tiny_gemma3"])
def test_judge_pass_span_reduction_interventions_and_steering_stay_on_the_models_device(
    request, on_meta, name, backend_name
):
    model = on_meta(request.getfixturevalue(name))
    assert model.device.type == "meta"
    backend = make_backend(model, backend_name)
    with DeviceAudit():
        for readout in ("final", "after"):
            (first, _) = judge_on(backend, model, readout=readout)
            assert first.mass is not None and first.mass.shape[0] == model.n_layers
        for spec in SPECS.values():
            judge_on(backend, model, bias=bias_builder(spec, model, judge_model="judge-model", authors=AUTHORS))
        direction = torch.randn(model.hf_model.config.hidden_size)
        for mode, positions in [("add", "all"), ("add", "spans"), ("project_out", "final")]:
            steering = ResidualSteering(layer=1, coefficient=1.0, mode=mode, positions=positions, direction=direction)
            judge_on(backend, model, edit=steering.builder())


@pytest.mark.parametrize("backend_name", ["hf", "nnsight"])
def test_the_dampen_context_stays_on_the_models_device(tiny_llama, on_meta, backend_name):
    """`with dampen(backend, ...)` (a plain HF model reads its padding from the mask's values, which a meta
    tensor does not have; on a GPU that is one small copy)."""
    model = on_meta(tiny_llama)
    backend = make_backend(model, backend_name)
    prompts = prompts_for(model)
    with DeviceAudit(), dampen(backend, "a", alpha=0.0, prompts=prompts):
        judge_batch(backend, prompts, label_tokens(model.tokenizer))


def test_the_audit_catches_a_stray_cpu_tensor(tiny_llama, on_meta):
    """A residual edit that adds a vector it made on the CPU: the audit names the op."""
    model = on_meta(tiny_llama)
    backend = make_backend(model, "hf")
    stray = torch.ones(model.hf_model.config.hidden_size)
    with DeviceAudit(), pytest.raises(StrayTensor, match="cpu"):
        judge_on(backend, model, edit=lambda batch, offsets, prompts: {1: lambda h: h + stray})


def test_the_audit_catches_what_meta_alone_misses(tiny_llama, on_meta):
    """A reducer whose key masks stayed on the CPU: `meta @ cpu` runs without complaint on the meta
    device (so meta alone would pass this bug), and the audit fails it as a GPU would."""
    model = on_meta(tiny_llama)
    prompts = prompts_for(model)
    spans = [p.spans for p in prompts]
    width = max(len(p.input_ids) for p in prompts)
    reducer = span_reducer(spans, width, model.n_layers, model.n_heads)
    pattern = torch.zeros(len(prompts), model.n_heads, 1, width, device="meta")
    rows = pattern[:, :, -1, :]
    rows @ reducer.key_masks.transpose(1, 2)  # the meta device lets this through
    with DeviceAudit(), pytest.raises(StrayTensor):
        rows @ reducer.key_masks.transpose(1, 2)
    with DeviceAudit():  # the reducer itself moves its masks to the pattern's device
        reducer(0, pattern)


def test_span_masses_come_back_to_the_cpu_in_float32(tiny_llama):
    model = dataclasses.replace(tiny_llama, hf_model=copy.deepcopy(tiny_llama.hf_model).to(torch.bfloat16))
    (judgment, _) = judge_on(make_backend(model, "hf"), model)
    assert judgment.mass.dtype == torch.float32 and judgment.mass.device.type == "cpu"
    assert torch.isfinite(judgment.mass).all()


def same_judgments(got, want, tolerance: float) -> None:
    for g, w in zip(got, want, strict=True):
        assert abs(g.probs["A"] - w.probs["A"]) < tolerance
        if w.mass is not None:
            assert g.mass.device.type == "cpu" and g.mass.dtype == torch.float32
            assert torch.allclose(g.mass, w.mass, atol=tolerance)


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU; on CPU the meta-device audit above stands in"
)
@pytest.mark.parametrize("backend_name", ["hf", "nnsight", "transformer_lens"])
def test_on_a_real_gpu_every_pass_runs_and_matches_the_cpu(tiny_llama_dir, backend_name):
    """On a GPU a stray CPU tensor raises; float32 results must also equal the CPU's (kernels differ, so 1e-4)."""
    from interp.core.models import load_model

    cpu = load_model(str(tiny_llama_dir), device="cpu")
    gpu = load_model(str(tiny_llama_dir), device="cuda", dtype="float32")
    assert gpu.device.type == "cuda"
    direction = torch.randn(cpu.hf_model.config.hidden_size, generator=torch.Generator().manual_seed(0))

    def cases(model):  # each built for its own model, as a user would
        yield dict(readout="final")
        yield dict(readout="after")
        for spec in SPECS.values():
            yield dict(bias=bias_builder(spec, model, judge_model="judge-model", authors=AUTHORS))
        for mode, positions in [("add", "all"), ("add", "spans"), ("project_out", "final")]:
            steering = ResidualSteering(layer=1, coefficient=1.0, mode=mode, positions=positions, direction=direction)
            yield dict(edit=steering.builder())

    backends = {"cpu": make_backend(cpu, backend_name), "gpu": make_backend(gpu, backend_name)}
    for on_gpu, on_cpu in zip(cases(gpu), cases(cpu), strict=True):
        same_judgments(judge_on(backends["gpu"], gpu, **on_gpu), judge_on(backends["cpu"], cpu, **on_cpu), 1e-4)
    prompts = prompts_for(gpu)
    with dampen(backends["gpu"], "a", alpha=0.0, prompts=prompts):
        on_gpu = judge_batch(backends["gpu"], prompts, label_tokens(gpu.tokenizer))
    with dampen(backends["cpu"], "a", alpha=0.0, prompts=prompts):
        on_cpu = judge_batch(backends["cpu"], prompts, label_tokens(cpu.tokenizer))
    same_judgments(on_gpu, on_cpu, 1e-4)
