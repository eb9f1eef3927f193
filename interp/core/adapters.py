"""LoRA adapters on a loaded base model: the shipped organisms and any peft adapter folder, merged on load.

A shipped organism lives in `interp/builtin/adapters/<name>/` (package data): `adapter_model.safetensors`
and `adapter_config.json` (peft format) and `manifest.json` (its base alias, the base's signature, the
training config and held-out figures). `apply_adapter` checks the adapter against the loaded base (model
type, widths, layer count, vocabulary) and that the safetensors file reads, then merges the LoRA into the
base weights (`merge_and_unload`), so every backend (plain HF, TransformerLens, nnsight) sees an ordinary
model. Any mismatch or unreadable file is one `InterpError` line.

A planted-heads organism (`interp.organisms.heads`) also holds `heads_delta.safetensors`: per head (layer l,
head h) of its planted set, the query rows `layers.l.q.h` ([head_dim, d_model], added to q_proj's rows of
head h) and, if trained, the output columns `layers.l.o.h` ([d_model, head_dim], added to o_proj's columns of
head h). It is added after the LoRA merge; no other weight changes.

An MLP-planted or direction organism (`interp.organisms.mlp`) keeps its delta in the same file, as low-rank factors
per MLP projection of its planted layers: `layers.l.mlp.P.a` ([rank, in]) and `layers.l.mlp.P.b` ([out, rank]), P one
of gate, up, down; `b @ a` is added to `mlp.P_proj.weight` (`add_weight_delta`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from interp.errors import InterpError
from interp.results.codec import read_organism_manifest

ADAPTERS_DIR = Path(__file__).resolve().parents[1] / "builtin" / "adapters"
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_config.json", "manifest.json")
HEAD_DELTA_FILE = "heads_delta.safetensors"  # a planted-heads organism's delta, beside the LoRA it starts from
_SIGNATURE_KEYS = (
    "model_type",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
)


def base_signature(hf_config) -> dict:
    """What an adapter needs of its base: model type, widths, layer and head counts, vocabulary size."""
    text = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    return {key: getattr(text, key, None) for key in _SIGNATURE_KEYS}


def shipped_adapters() -> dict[str, Path]:
    """name -> folder of every organism shipped in the package."""
    if not ADAPTERS_DIR.is_dir():
        return {}
    return {p.name: p for p in sorted(ADAPTERS_DIR.iterdir()) if (p / "manifest.json").is_file()}


def read_manifest(folder: Path) -> dict:
    """An organism folder's manifest, read by the codec (`OrganismManifest`), once the folder is checked to hold
    an organism adapter whose manifest names its base."""
    folder = Path(folder)
    if start_reference(folder) is not None:  # a planted-heads organism shipped without a copy of its start's LoRA
        manifest = _json_object(folder / "manifest.json")
        if not isinstance(manifest.get("base_model"), str):
            raise InterpError(f'{folder / "manifest.json"}: no "base_model" field')
        return read_organism_manifest(folder).to_json()
    for name in ADAPTER_FILES:
        if not (folder / name).is_file():
            raise InterpError(f"{folder}: not an organism adapter folder (no {name})")
    manifest = _json_object(folder / "manifest.json")
    _json_object(folder / "adapter_config.json")  # peft would report a bad one as a misfit of the base model
    if not isinstance(manifest.get("base_model"), str):
        raise InterpError(f'{folder / "manifest.json"}: no "base_model" field')
    return read_organism_manifest(folder).to_json()


def _json_object(path: Path) -> dict:
    """A JSON object read from `path`; unreadable, not UTF-8, not JSON or not an object is one line naming it."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise InterpError(f"{path}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise InterpError(f"{path}: not UTF-8 text, so not valid JSON; the adapter folder is corrupt") from None
    except json.JSONDecodeError as exc:
        raise InterpError(
            f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); the adapter folder is corrupt"
        ) from None
    if not isinstance(data, dict):
        raise InterpError(f"{path}: not a JSON object (got {type(data).__name__}); the adapter folder is corrupt")
    return data


def _check_safetensors(path: Path) -> None:
    import torch
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            bad = next((key for key in handle.keys() if not bool(torch.isfinite(handle.get_tensor(key)).all())), None)
    except Exception as exc:  # safetensors raises its own error types (and OSError) on a bad file
        raise InterpError(
            f"{path}: corrupt adapter file ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
        ) from None
    if bad is not None:
        raise InterpError(f"{path}: corrupt adapter file (tensor {bad} holds NaN or infinity)")


def check_base(folder: Path, manifest: dict, hf_config) -> None:
    """The loaded base must be the one the adapter was trained on (same signature)."""
    expected = manifest.get("base_signature") or {}
    actual = base_signature(hf_config)
    wrong = {k: (expected[k], actual.get(k)) for k in expected if expected[k] != actual.get(k)}
    if wrong:
        detail = ", ".join(f"{k} {want} != {got}" for k, (want, got) in wrong.items())
        raise InterpError(
            f"{folder}: adapter trained on {manifest['base_model']!r} does not match the loaded base ({detail})"
        )


def start_reference(folder: Path) -> Path | None:
    """For a planted-heads organism kept without its LoRA (only `manifest.json` and the head delta: the shipped
    form), the folder of the organism it starts from (`heads_start` in the manifest, a shipped alias); the
    start's adapter must still be the one it was trained on (`heads_start_fingerprint`). None otherwise."""
    folder = Path(folder)
    if (folder / "adapter_model.safetensors").exists() or not (
        (folder / HEAD_DELTA_FILE).is_file() and (folder / "manifest.json").is_file()
    ):
        return None
    manifest = _json_object(folder / "manifest.json")
    start = manifest.get("heads_start")
    shipped = shipped_adapters()
    if not isinstance(start, str) or start not in shipped:
        raise InterpError(
            f"{folder}: a head delta without its LoRA must name a shipped start organism (heads_start); got {start!r}"
        )
    if adapter_fingerprint(start) != manifest.get("heads_start_fingerprint"):
        raise InterpError(
            f"{folder}: its start organism {start!r} is not the adapter it was trained on (fingerprint differs)"
        )
    return shipped[start]


def apply_adapter(hf_model, folder: Path):
    """The HF model with the adapter in `folder` merged into its weights (checked first); returns the merged model."""
    from peft import PeftModel

    folder = Path(folder)
    manifest = read_manifest(folder)
    check_base(folder, manifest, hf_model.config)
    start = start_reference(folder)
    lora = start if start is not None else folder
    _check_safetensors(lora / "adapter_model.safetensors")
    try:
        wrapped = PeftModel.from_pretrained(hf_model, str(lora))
        _privatise_lora_targets(wrapped)
        merged = wrapped.merge_and_unload()
    except (RuntimeError, ValueError, KeyError) as exc:
        raise InterpError(f"{folder}: adapter does not fit the base model ({str(exc).splitlines()[0][:160]})") from None
    delta = folder / HEAD_DELTA_FILE
    if delta.is_file():
        from safetensors.torch import load_file

        _check_safetensors(delta)
        try:
            add_weight_delta(merged, load_file(str(delta)))
        except (KeyError, ValueError, IndexError, RuntimeError) as exc:
            raise InterpError(
                f"{delta}: head delta does not fit the base model ({str(exc).splitlines()[0][:160]})"
            ) from None
    merged.eval()
    return merged


def _privatise_lora_targets(wrapped) -> None:
    """Each weight a LoRA layer will merge into becomes a copy of its own first: PEFT merges in place, and the
    weight given may be another model's too (`interp.core.weight_sharing.adopt_weights`: an organism beside its
    base holds the base's tensors). The merged values are the same: the same sum, into a copy."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    from interp.core.weight_sharing import private_parameter

    for module in wrapped.modules():
        if isinstance(module, BaseTunerLayer):
            base_layer = module.get_base_layer()
            for name, _ in list(base_layer.named_parameters(recurse=False)):
                private_parameter(base_layer, name)


def head_delta_key(layer: int, module: str, head: int) -> str:
    """The name of one head's block in `heads_delta.safetensors`: module "q" (query rows) or "o" (output columns) of
    query head `head`, or "k" / "v" (key / value rows) of key/value head `head`."""
    return f"layers.{layer}.{module}.{head}"


def parse_head_delta_key(key: str) -> tuple[int, str, int]:
    """(layer, module, head) of a `head_delta_key`; ValueError for any other name."""
    parts = key.split(".")
    if (
        len(parts) != 4
        or parts[0] != "layers"
        or parts[2] not in ("q", "k", "v", "o")
        or not (parts[1].isdigit() and parts[3].isdigit())
    ):
        raise ValueError(f"unknown tensor name {key!r} (expected layers.L.M.H, M one of q, k, v, o)")
    return int(parts[1]), parts[2], int(parts[3])


MLP_PROJECTIONS = ("gate", "up", "down")


def _decoder_layers(hf_model):
    """The merged model's decoder layers, where both kinds of delta (head blocks, MLP factors) are added."""
    return hf_model.get_decoder().layers if hasattr(hf_model, "get_decoder") else hf_model.model.layers


def mlp_delta_key(layer: int, projection: str, factor: str) -> str:
    """The name of one factor of an MLP delta in the delta file: `a` ([rank, in]) or `b` ([out, rank]) of projection
    `projection` (gate, up, down) of layer `layer`; the delta added to the projection's weight is b @ a."""
    return f"layers.{layer}.mlp.{projection}.{factor}"


def parse_mlp_delta_key(key: str) -> tuple[int, str, str] | None:
    """(layer, projection, factor) of an MLP delta key; None for any other key."""
    parts = key.split(".")
    if len(parts) != 5 or parts[0] != "layers" or parts[2] != "mlp" or not parts[1].isdigit():
        return None
    if parts[3] not in MLP_PROJECTIONS or parts[4] not in ("a", "b"):
        raise ValueError(f"unknown tensor name {key!r} (expected layers.L.mlp.P.F, P one of gate, up, down, F a or b)")
    return int(parts[1]), parts[3], parts[4]


def mlp_delta_products(tensors: dict) -> dict:
    """{(layer, projection): b @ a} of the MLP factors among `tensors` (each projection needs both factors)."""
    factors: dict[tuple[int, str], dict[str, object]] = {}
    for key, value in tensors.items():
        parsed = parse_mlp_delta_key(key)
        if parsed is not None:
            factors.setdefault(parsed[:2], {})[parsed[2]] = value
    for (layer, projection), pair in factors.items():
        if set(pair) != {"a", "b"}:
            raise ValueError(f"layers.{layer}.mlp.{projection}: needs both factors a and b (got {sorted(pair)})")
    return {site: pair["b"].float() @ pair["a"].float() for site, pair in sorted(factors.items())}


def add_weight_delta(hf_model, tensors: dict) -> None:
    """Add an organism's delta file in place: its head blocks (`add_head_delta`) and its MLP factors (b @ a added to
    each planted MLP projection's weight). Nothing else is written, and no tensor the model was given (each weight
    written becomes a copy of its own first)."""
    import torch

    from interp.core.weight_sharing import private_parameter

    heads = {key: value for key, value in tensors.items() if parse_mlp_delta_key(key) is None}
    if heads:
        add_head_delta(hf_model, heads)
    layers = _decoder_layers(hf_model)
    with torch.no_grad():
        for (layer, projection), product in mlp_delta_products(tensors).items():
            proj = getattr(layers[layer].mlp, f"{projection}_proj")
            if proj.weight.shape != product.shape:
                raise ValueError(
                    f"layers.{layer}.mlp.{projection}: delta {tuple(product.shape)} does not fit the weight "
                    f"{tuple(proj.weight.shape)}"
                )
            private_parameter(proj, "weight")
            proj.weight += product.to(proj.weight.device, proj.weight.dtype)


def add_head_delta(hf_model, tensors: dict) -> None:
    """Add a head delta in place: each "q" / "k" / "v" block to its head's rows of q_proj / k_proj / v_proj.weight
    (k and v: a key/value head's rows), each "o" block to its head's columns of o_proj.weight (Llama-style
    `model.layers[l].self_attn`). Nothing else is written, and no tensor the model was given: each weight written
    becomes a copy of its own first (`private_parameter`; it may be another model's too)."""
    import torch

    from interp.core.weight_sharing import private_parameter

    layers = _decoder_layers(hf_model)
    private: set[int] = set()

    def writable(proj) -> torch.Tensor:
        if id(proj) not in private:
            private_parameter(proj, "weight")
            private.add(id(proj))
        return proj.weight

    with torch.no_grad():
        for key, block in sorted(tensors.items()):
            layer, module, head = parse_head_delta_key(key)
            attn = layers[layer].self_attn
            dim = attn.head_dim
            if module in ("q", "k", "v"):
                weight = writable(getattr(attn, f"{module}_proj"))
                rows = weight[head * dim : (head + 1) * dim]
                if head * dim >= weight.shape[0] or rows.shape != block.shape:
                    raise ValueError(
                        f"{key}: shape {tuple(block.shape)} does not fit {module}_proj rows {tuple(rows.shape)}"
                    )
                rows += block.to(rows.device, rows.dtype)
            else:
                cols = writable(attn.o_proj)[:, head * dim : (head + 1) * dim]
                if head * dim >= attn.o_proj.weight.shape[1] or cols.shape != block.shape:
                    raise ValueError(
                        f"{key}: shape {tuple(block.shape)} does not fit o_proj columns {tuple(cols.shape)}"
                    )
                cols += block.to(cols.device, cols.dtype)


def adapter_folder(spec: str) -> Path | None:
    """The adapter folder a model spec names: a shipped organism alias, or a local folder holding an adapter."""
    shipped = shipped_adapters()
    if spec in shipped:
        return shipped[spec]
    path = Path(spec).expanduser()
    if path.is_dir() and ((path / "adapter_config.json").is_file() or (path / HEAD_DELTA_FILE).is_file()):
        read_manifest(path)  # an adapter folder without its manifest cannot name its base: say so here
        return path
    return None


def adapter_fingerprint(spec: str) -> str | None:
    """SHA-256 (16 hex) of the adapter weights a spec loads (None for a plain model): the organism's name is a
    label, these bytes are what determines its verdicts."""
    folder = adapter_folder(spec)
    if folder is None:
        return None
    digest = hashlib.sha256()
    start = start_reference(folder)
    files = [(start or folder) / "adapter_model.safetensors"] + [folder / HEAD_DELTA_FILE] * (
        folder / HEAD_DELTA_FILE
    ).is_file()
    for path in files:  # a kept-apart start's LoRA hashes as the copy would: both forms have one fingerprint
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def organism_family(spec: str) -> dict:
    """For an organism: {"family": the config name its seeds share, "role": "null" | "planted", "seed": its
    training seed}; {} for a plain model. Members are named <family>-seed<N>; the family's seed-0 member
    carries the family's name."""
    import re

    folder = adapter_folder(spec)
    if folder is None:
        return {}
    manifest = read_manifest(folder)
    share = manifest.get("config", {}).get("planting", {}).get("share", 0.0)
    return {
        "family": manifest.get("family") or re.sub(r"-seed\d+$", "", manifest.get("name", Path(folder).name)),
        "role": "planted" if share and share > 0 else "null",
        "seed": manifest.get("seed"),
    }


def organism_base(spec: str) -> str | None:
    """The base model an organism (shipped alias or adapter folder) was trained on; None for a plain model."""
    folder = adapter_folder(spec)
    return read_manifest(folder)["base_model"] if folder is not None else None
