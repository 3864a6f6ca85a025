"""``torch.backends.cuda``: ``matmul.allow_tf32`` may be set and changes nothing: execmode's
float32 matmuls on a GPU go through CuPy's cuBLAS calls in float32."""

from __future__ import annotations

import importlib.util


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: settable flags with no effect here."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = False
        self.allow_bf16_reduced_precision_reduction = False


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether CuPy (execmode's way to a GPU) is installed."""
    return importlib.util.find_spec("cupy") is not None


def flash_sdp_enabled() -> bool:
    """False: scaled_dot_product_attention is execmode's own (matmul, softmax, matmul)."""
    return False


def mem_efficient_sdp_enabled() -> bool:
    """False: scaled_dot_product_attention is execmode's own."""
    return False


def math_sdp_enabled() -> bool:
    """True: the math formulation is the one execmode computes."""
    return True
