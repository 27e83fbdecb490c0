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

from differential import check_functions, lower_example, run  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
TANG_BIN = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
VK_RUN = pathlib.Path(
    os.environ.get("TANG_VK_RUN", ROOT / "build-vk" / "tang-vk-run"))
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))

# (example) -> why its outputs are known to be wrong on lavapipe. Strict.
KNOWN_LIMITS = {
    "transformer_block":
        "lavapipe ends loops after 65535 iterations per invocation (see "
        "test_vulkan_differential.py)",
}


@pytest.fixture(scope="module")
def backend():
    if not (VK_RUN.is_file() and os.access(VK_RUN, os.X_OK)):
        pytest.skip(f"tang-vk-run not built at {VK_RUN}")
    if not shutil.which("glslangValidator"):
        pytest.skip("glslangValidator not found (glslang-tools)")
    r = run([VK_RUN, "--probe"], timeout=60)
    if r.returncode == 2:
        pytest.skip("no Vulkan device: " + r.stderr.strip())
    assert r.returncode == 0, r.stderr
    return "glsl-vulkan"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_matches_interpreter(example, backend, tmp_path, request):
    reason = KNOWN_LIMITS.get(example.stem)
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True,
                                              raises=AssertionError))
    bundle = tmp_path / "bundle"
    manifest = lower_example(TANG_BIN, example, "tang-lower-glsl", bundle,
                             "spirv")
    assert list(bundle.glob("*.comp")), "no GLSL sources in the bundle"
    check_functions(backend, example, manifest, tmp_path, TANG_BIN,
                    lambda name, inputs, out: run(
                        [VK_RUN, bundle, name, *inputs, "--out", out]))
