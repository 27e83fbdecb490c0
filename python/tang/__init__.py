"""tang: Python helpers for the tang tensor compiler.

Submodules:
  tang.cuda  load a CUDA bundle written by ``tang-opt --tang-lower-cuda``
             (docs/Bundle.md) and run its functions on PyTorch tensors,
             through ctypes over the CUDA driver (no compiled extension).

Importing ``tang`` or ``tang.cuda`` needs neither PyTorch nor a GPU.
"""

from . import cuda

__all__ = ["cuda"]
