"""A weight's exact bit sum, summed in chunks (no int64 copy of a whole tensor), is the whole tensor's sum."""

from __future__ import annotations

import torch

from interp.core import fingerprint


def test_chunked_bit_sum_is_the_exact_sum(monkeypatch):
    weights = torch.randn(1000, 37)
    bits = weights.reshape(-1).view(torch.int32)
    whole = int(bits.to(torch.int64).sum().item())
    monkeypatch.setattr(fingerprint, "_CHUNK", 999)  # chunks that do not divide the tensor
    assert fingerprint._exact_sum(bits) == whole
    assert fingerprint._tensor_digest(weights)[2] == whole
    monkeypatch.setattr(fingerprint, "_CHUNK", 1 << 22)
    assert fingerprint._tensor_digest(weights)[2] == whole
