"""Whole models written with tang.lang: each a graph builder (one tang
function per step) and its configurations.

* tang.models.qwen3: a Qwen3-shaped decoder (decode step and prefill).
* tang.models.qwen3_next: the layers of a hybrid Qwen3-Next-shaped model
  (so far its sparse mixture-of-experts layer).
"""

from . import qwen3, qwen3_next

__all__ = ["qwen3", "qwen3_next"]
