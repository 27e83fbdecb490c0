"""The GLSL backend against the reference interpreter, on Mesa lavapipe.

Every example is lowered with `tang-opt --tang-lower-glsl="fuse=1
bundle=..."` (one GLSL 4.50 compute shader per kernel, printed from the
kernel form, compiled by glslangValidator and linked by spirv-link into one
SPIR-V module with an entry point per kernel), run by tang-vk-run
(runtime/vulkan) on the first Vulkan device and by tang-run on the same
seeded random inputs; every output must match within the dtype's tolerance.

Run:  TANG_VK_RUN=<build-vk>/tang-vk-run TANG_BIN=<build>/bin \\
      /usr/bin/python3 -m pytest -q test/Runtime/test_glsl_differential.py
Skipped when tang-vk-run is not built, finds no device, or glslangValidator
is missing.
"""

import os
import pathlib
import shutil

import pytest

from differential import (HALF_PROGRAM, NAIVE_ATTENTION_PROGRAM, FLASH_PROGRAM, FLASH_PROGRAM_SCHEDULED, check_attention_gradient, ORDERED_PROGRAM, TILED_PROGRAM, CONSTANT_PROGRAM, SIZE_IN_BODY_PROGRAM, GATHER_PROGRAM, SCATTER_PROGRAM, CMPF_PROGRAM,  # noqa: E402
                          INDEX_PROGRAM, check_functions, check_program,
                          lower_example, run_vulkan, vulkan_backend)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
VK_RUN = pathlib.Path(
    os.environ.get("TANG_VK_RUN", ROOT / "build-vk" / "tang-vk-run"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))

# (backend, example) -> why its outputs are known to be wrong there. Strict.
KNOWN_LIMITS = {
    ("glsl-vulkan-lavapipe", "transformer_block"):
        "Mesa 22.3's lavapipe ends loops after 65535 iterations per "
        "invocation (see test_vulkan_differential.py)",
}


def host(bundle):
    """Runs a function of `bundle` with tang-vk-run (check_functions)."""
    return lambda name, inputs, out, sizes=(): run_vulkan(
        [VK_RUN, bundle, name, *inputs, *sizes, "--out", out])


@pytest.fixture(scope="module")
def backend():
    if not shutil.which("glslangValidator"):
        pytest.skip("backend glsl: glslangValidator not found (glslang-tools)")
    return "glsl-" + vulkan_backend(VK_RUN)


def test_half_precision_matches_interpreter(backend, tmp_path):
    """f16 buffers as float16_t storage blocks (GL_EXT_shader_16bit_storage:
    StorageBuffer16BitAccess only), computed in f32."""
    manifest = check_program(backend, HALF_PROGRAM, tmp_path, TANG_BIN,
                             "tang-lower-glsl", "spirv", host)
    assert [a["dtype"] for a in manifest["functions"][0]["args"]] == \
        ["f16"] * 4
    shader = next(tmp_path.rglob("*.comp")).read_text()
    assert "GL_EXT_shader_16bit_storage" in shader and "float16_t a0[]" in \
        shader


def test_half_precision_attention_matches_interpreter(backend, tmp_path):
    """Causal attention stored in f16 on the SIMT flash kernel."""
    text = NAIVE_ATTENTION_PROGRAM.replace("f32", "f16").replace(
        "0xFF800000 : f16", "0xFC00 : f16")
    check_program(backend, text, tmp_path, TANG_BIN, "tang-lower-glsl",
                  "spirv", host)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_interpreter(example, backend, tmp_path, request):
    reason = KNOWN_LIMITS.get((backend, example.stem))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True,
                                              raises=AssertionError))
    bundle = tmp_path / "bundle"
    manifest = lower_example(TANG_BIN, example, "tang-lower-glsl", bundle,
                             "spirv")
    assert list(bundle.glob("*.comp")), "no GLSL sources in the bundle"
    check_functions(backend, example, manifest, tmp_path, TANG_BIN,
                    host(bundle))


@pytest.mark.parametrize("program_text",
                         [GATHER_PROGRAM, SCATTER_PROGRAM, CONSTANT_PROGRAM,
                          SIZE_IN_BODY_PROGRAM, ORDERED_PROGRAM, TILED_PROGRAM,
                          FLASH_PROGRAM, FLASH_PROGRAM_SCHEDULED],
                         ids=["gather", "scatter", "constants", "size-in-body",
                              "ordered-row",
                              "tiled", "flash", "flash-scheduled"])
def test_data_dependent_programs_match_interpreter(program_text, backend,
                                                   tmp_path):
    """tang.gather with the clamp and zero policies (indices out of range on
    both sides); tang.scatter: a scatter-add with collisions, an insert into
    its result, out-of-range rows dropped. (The scatter's copy and update
    kernels have different block sizes.)"""
    check_program(backend, program_text, tmp_path, TANG_BIN,
                  "tang-lower-glsl", "spirv", host)


def test_attention_gradient_matches_interpreter(backend, tmp_path):
    check_attention_gradient(backend, tmp_path, TANG_BIN, "tang-lower-glsl", "spirv",
                             host)


def test_float_compares_follow_cmpf(backend, tmp_path):
    """Every arith.cmpf predicate, ordered and unordered, on NaN, infinities
    and finite values; NaNs and infinities pass through exactly."""
    check_program(backend, CMPF_PROGRAM, tmp_path, TANG_BIN,
                  "tang-lower-glsl", "spirv", host, special=True)


def test_float_index_matches_interpreter(backend, tmp_path):
    """`tang.index ... : f32`, converted through i32 (32-bit indices)."""
    check_program(backend, INDEX_PROGRAM, tmp_path, TANG_BIN,
                  "tang-lower-glsl", "spirv", host)
