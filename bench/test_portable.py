"""bench_portable's host plumbing, without a GPU: the other hosts' set-up
(an OpenCL ICD file for NVIDIA's library, the device probes and which
hosts are timed) and the timing line of each host.

Run: /usr/bin/python3 -m pytest -q bench/test_portable.py
"""

import os
import stat
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_portable as bp  # noqa: E402


def fake_program(path, text):
    """An executable shell script at `path` printing `text` (stdout)."""
    path.write_text("#!/bin/sh\ncat <<'END'\n" + text + "\nEND\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def fake_machine(tmp_path, monkeypatch):
    """A GPU machine as bench_portable sees it: `ldconfig -p` naming
    NVIDIA's OpenCL library, no Node pack, and fake host runners whose
    output each test sets."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lib = tmp_path / "libnvidia-opencl.so.1"
    lib.write_text("")
    fake_program(bin_dir / "ldconfig",
                 f"\tlibnvidia-opencl.so.1 (libc6,x86-64) => {lib}")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    monkeypatch.setattr(bp, "NODE_PACK", tmp_path / "no-pack.tar.xz")
    hosts = dict(bp.HOSTS)

    def set_outputs(opencl, webgpu):
        hosts["opencl"] = ("opencl", fake_program(tmp_path / "ocl", opencl))
        hosts["webgpu"] = ("wgsl", fake_program(tmp_path / "wgpu", webgpu))
        monkeypatch.setattr(bp, "HOSTS", hosts)
    return tmp_path, lib, set_outputs


def test_gpu_hosts_are_set_up_and_timed(fake_machine):
    tmp, lib, set_outputs = fake_machine
    set_outputs("device: NVIDIA H100 80GB HBM3 (OpenCL 3.0 CUDA)",
                "NVIDIA hopper NVIDIA H100 80GB HBM3")
    other = bp.setup_other_hosts(tmp)
    icd_dir = Path(os.environ["OCL_ICD_VENDORS"])
    assert (icd_dir / "nvidia.icd").read_text().strip() == str(lib)
    assert other["opencl"] == {"device": "NVIDIA H100 80GB HBM3 (OpenCL "
                               "3.0 CUDA)", "usable": True, "why": None}
    assert other["webgpu"]["usable"] and "H100" in other["webgpu"]["device"]


def test_cpu_devices_are_not_timed(fake_machine):
    tmp, _, set_outputs = fake_machine
    set_outputs("device: pthread-haswell-AMD EPYC (OpenCL 3.0 PoCL)",
                "mesa software llvmpipe (LLVM 15.0.6)")
    other = bp.setup_other_hosts(tmp)
    assert other["opencl"]["usable"] is False
    assert other["webgpu"]["usable"] is False
    assert other["opencl"]["why"] == "a CPU device"


def test_a_failing_host_is_recorded_not_raised(fake_machine):
    tmp, _, set_outputs = fake_machine
    set_outputs("", "")  # bp.HOSTS is now the test's copy
    failing = tmp / "failing"
    failing.write_text("#!/bin/sh\necho 'no adapter' >&2\nexit 2\n")
    failing.chmod(0o755)
    bp.HOSTS["webgpu"] = ("wgsl", failing)
    bp.HOSTS["opencl"] = ("opencl", tmp / "not-built")
    other = bp.setup_other_hosts(tmp)
    assert other["webgpu"] == {"usable": False,
                               "why": "exit 2: no adapter"}
    assert other["opencl"] == {"usable": False, "why": "not carried"}


@pytest.mark.parametrize("clock", ["GPU timestamps", "profiling events",
                                   "wall clock"])
def test_every_host_timing_line_parses(clock):
    line = (f"  time: median 0.2414 ms, least 0.2401, greatest 0.2500 over "
            f"15 runs ({clock}; buffers in device memory)")
    m = bp.TIME_RE.search(line)
    assert m and float(m.group(1)) == 0.2414 and m.group(5) == clock
    assert m.group(6) == "device"
    assert not bp.TIME_RE.search(line.replace(clock, "guesswork"))
