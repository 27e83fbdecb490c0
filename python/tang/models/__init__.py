"""Whole models written with tang.lang: each a graph builder (one tang
function per step) and its configurations.

* tang.models.qwen3: a Qwen3-shaped decoder (decode step and prefill).
"""

from . import qwen3

__all__ = ["qwen3"]
