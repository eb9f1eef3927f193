"""What a model spec that names files holds, as a hash of those files' content: the key of every result a judge,
control or gold model given as a folder, a .gguf file or a local adapter folder made.

A spec's path says where a model is, not what it holds: `cp seed4/model.safetensors mut/` leaves `mut` the same
spec with other weights. So a result is keyed by `spec_content_key(spec)`:

- a model folder: every regular file at its top level (weights, config, generation config, tokenizer files, chat
  template; symlinks followed; hidden files and `README*`, `LICENSE*`, `*.md` left out), each as its name, size and
  SHA-256;
- a .gguf file: its size and SHA-256;
- a local adapter folder (an organism trained by the user): the adapter weights' fingerprint
  (`interp.core.adapters.adapter_fingerprint`);
- a packaged alias, a shipped organism or an HF id: None, so the keys of results made with them are what they
  were (their content cannot change under the same name: the package's files, an HF snapshot folder).

A file is hashed once: its digest is kept in the cache folder (`file-digests/`) under its resolved path, device,
inode, size, modification and change times (`ctime` moves on every write, even one that restores `mtime`), so a
re-run reads a 270 MB GGUF's digest back instead of hashing it again, and any write to the file hashes it anew.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

from interp.errors import InterpError

_SKIPPED = ("README", "LICENSE")  # a model folder's files that no load reads


def _skipped(name: str) -> bool:
    return name.startswith(".") or name.upper().startswith(_SKIPPED) or name.lower().endswith(".md")


def file_digest(path: Path) -> str:
    """`<size>:<sha256>` of a file's bytes, read back from the cache while the file is unchanged (see the module's
    docstring), else hashed and cached."""
    from interp.core.models import cache_root
    from interp.storage import atomic_write_text

    resolved = Path(path).resolve()
    stat = resolved.stat()
    stamp = [str(resolved), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
    cached = cache_root() / "file-digests" / hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:32]
    try:
        text = cached.read_text()
        if text.startswith(f"{stat.st_size}:") and len(text) == len(f"{stat.st_size}:") + 64:
            return text
    except OSError:
        pass
    digest = hashlib.sha256()
    with open(resolved, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    value = f"{stat.st_size}:{digest.hexdigest()}"
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cached, value)
    except OSError:  # a cache that cannot be written costs a second hash next time, never a wrong key
        pass
    return value


def folder_digest(folder: Path) -> str:
    """A hash of a model folder's files (name, size, SHA-256 of each regular file at its top level)."""
    files = sorted(p for p in Path(folder).iterdir() if not _skipped(p.name) and p.is_file())
    payload = [[p.name, file_digest(p)] for p in files]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:24]


def spec_content_key(spec: str) -> str | None:
    """The content key of a spec that names local files (see the module's docstring); None for a packaged alias,
    a shipped organism, an HF id or a name that is no path."""
    from interp.core.adapters import adapter_fingerprint, shipped_adapters
    from interp.core.models import ALIASES

    if spec in ALIASES or spec in shipped_adapters():
        return None
    path = Path(spec).expanduser()
    if not (path.is_dir() or path.is_file()):
        return None
    adapter = adapter_fingerprint(spec) if path.is_dir() else None
    if adapter is not None:
        return f"adapter:{adapter}"
    if path.is_dir():
        return f"folder:{folder_digest(path)}"
    return f"file:{hashlib.sha256(file_digest(path).encode()).hexdigest()[:24]}"


def judge_content_key(spec: str, model=None) -> str | None:
    """What a judge holds: for a model the caller wrapped (`source == "user"`, `Judge.wrap`), the fingerprint of
    the object's weights, generation config and tokenizer (`LoadedModel.fingerprint`: two models wrapped under one
    name are two keys); else `spec_content_key(spec)`."""
    if model is not None and getattr(model, "source", None) == "user":
        return f"held:{held_fingerprint(model)}"
    return spec_content_key(spec)


def held_fingerprint(model) -> str:
    """`model.fingerprint()`, kept in the model's `meta` while no parameter has changed since (each parameter's
    in-place version counter, so `load_state_dict`, an optimiser step or `mul_` hash anew): keying a hundred
    variants of one held judge hashes its weights once."""
    stamp = [id(model.tokenizer)] + [[id(p), p._version] for p in model.hf_model.parameters()]
    cached = model.meta.get("content_fingerprint")
    if cached is None or cached[0] != stamp:
        cached = (stamp, model.fingerprint())
        model.meta["content_fingerprint"] = cached
    return cached[1]


def one_model(first: str, second: str) -> bool:
    """Whether two specs are one model: the same thing loaded (`model_identity`: `/m/b`, `/m/./b`, `/m/../m/b/`,
    a symlink to it alike) or files of the same content (a byte-identical copy, `spec_content_key`)."""
    from interp.core.models import model_identity

    if first == second or model_identity(first) == model_identity(second):
        return True
    key = spec_content_key(first)
    return key is not None and key == spec_content_key(second)


def check_distinct(specs: Sequence[str], what: str) -> None:
    """One line when two of `specs` are one model (`one_model`); `what` names the list ("--control-judge")."""
    for i, first in enumerate(specs):
        for second in specs[i + 1 :]:
            if one_model(first, second):
                how = "twice" if first == second else f"twice ({first!r} and {second!r} are one model)"
                raise InterpError(f"{what} names {first!r} {how}; name each model once")
