# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TANG"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tang_obj_root, "test")
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%tang_src", config.tang_src_root))
config.substitutions.append(("%tang_obj", config.tang_obj_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.tang_tools_dir, append_path=True)

tools = ["tang-opt", "tang-run", "tang-translate"]
llvm_config.add_tool_substitutions(tools, [config.tang_tools_dir])

# ptxas (CUDA toolkit) checks the PTX tang emits, where it is installed.
import shutil
ptxas = shutil.which("ptxas") or next(
    (p for p in ("/usr/local/cuda/bin/ptxas", "/usr/local/cuda-13.0/bin/ptxas")
     if os.path.exists(p)), None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# clang++ (LLVM 22's, from the toolchain) lints the Metal tang prints against
# a stub metal_stdlib.
clangxx = os.path.join(config.llvm_tools_dir, "clang++")
if os.path.exists(clangxx):
    config.available_features.add("clangxx")
    config.substitutions.append(("%clangxx", clangxx))

# spirv-val (Debian's spirv-tools) validates the SPIR-V tang emits.
spirv_val = shutil.which("spirv-val")
if spirv_val:
    config.available_features.add("spirv-val")
    config.substitutions.append(("%spirv_val", spirv_val))
