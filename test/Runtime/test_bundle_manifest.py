"""Tests of the CUDA bundle runtimes that need no GPU.

- tang.cuda (python/tang/cuda.py): manifest parsing and validation, the
  single clear error without a driver or a device, import without PyTorch.
- The same paths through a mock driver: a small C library compiled here that
  implements the driver entry points on host memory (its "kernels" are C
  functions named in a fake image), loaded through TANG_LIBCUDA. It checks
  the ctypes signatures, the launch-parameter packing, temporaries, shared
  memory attributes, JIT error logs and timing without a GPU.
- tang-cuda-run (runtime/cuda), when built (TANG_CUDA_RUN names the binary,
  default build-rt/tang-cuda-run): the same manifest errors, word for word,
  and a full run through the mock driver with .npy files.
"""

import copy
import ctypes
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import tang.cuda as tc  # noqa: E402

CUDA_RUN = pathlib.Path(
    os.environ.get("TANG_CUDA_RUN", ROOT / "build-rt" / "tang-cuda-run"))

# The example of docs/Bundle.md.
EXAMPLE = {
    "version": 1,
    "format": "ptx",
    "image": "tang_kernels.ptx",
    "chip": "sm_90a",
    "functions": [{
        "name": "main",
        "args": [
            {"role": "input", "shape": [8, 32], "dtype": "f32"},
            {"role": "output", "shape": [8, 32], "dtype": "f32"},
        ],
        "temporaries": [{"shape": [8], "dtype": "f32"}],
        "launches": [{
            "kernel": "main_k0",
            "grid": [8, 1, 1],
            "block": [256, 1, 1],
            "shared_bytes": 0,
            "args": [{"arg": 0}, {"temp": 0}, {"arg": 1}],
        }],
    }],
}


def write_bundle(d: pathlib.Path, manifest, image="// no kernels\n"):
    d.mkdir(parents=True, exist_ok=True)
    text = manifest if isinstance(manifest, str) else json.dumps(manifest,
                                                                 indent=2)
    (d / "manifest.json").write_text(text)
    if image is not None:
        name = "tang_kernels.ptx"
        if isinstance(manifest, dict) and isinstance(manifest.get("image"),
                                                     str):
            name = manifest["image"] or name
        (d / name).write_text(image)
    return d


# ---------------------------------------------------------------------------
# Manifest parsing
# ---------------------------------------------------------------------------


def test_example_parses():
    m = tc.parse_manifest(json.dumps(EXAMPLE))
    assert (m.version, m.format, m.image, m.chip) == (
        1, "ptx", "tang_kernels.ptx", "sm_90a")
    f = m.function("main")
    assert f.inputs == (0,) and f.outputs == (1,)
    assert f.args[0] == tc.BufferSpec("input", (8, 32), "f32")
    assert f.args[0].nbytes == 8 * 32 * 4
    assert f.temporaries == (tc.BufferSpec("temporary", (8,), "f32"),)
    (launch,) = f.launches
    assert launch.kernel == "main_k0"
    assert launch.grid == (8, 1, 1) and launch.block == (256, 1, 1)
    assert launch.args == (tc.LaunchArg("arg", 0), tc.LaunchArg("temp", 0),
                           tc.LaunchArg("arg", 1))


def test_scalars_every_dtype_and_cubin():
    m = copy.deepcopy(EXAMPLE)
    m["format"] = "cubin"
    m["functions"][0]["args"] = [
        {"role": "input", "shape": [], "dtype": d} for d in tc.DTYPES]
    m["functions"][0]["launches"][0]["args"] = [{"arg": 6}]
    f = tc.parse_manifest(m).function("main")
    assert [a.dtype for a in f.args] == list(tc.DTYPES)
    assert [a.nbytes for a in f.args] == [8, 4, 2, 2, 4, 1, 1]
    assert all(a.shape == () and a.numel == 1 for a in f.args)


def test_unknown_function_names_the_others():
    m = tc.parse_manifest(EXAMPLE)
    with pytest.raises(ValueError, match=r"no function 'mian' in the bundle "
                                         r"\(it has main\)"):
        m.function("mian")


def _f0(m):
    return m["functions"][0]


def _l0(m):
    return m["functions"][0]["launches"][0]


def _set(get, key, value):
    def mutate(m):
        get(m)[key] = value
    return mutate


def _del(get, key):
    def mutate(m):
        del get(m)[key]
    return mutate


def _top(m):
    return m


def _arg(i):
    return lambda m: m["functions"][0]["args"][i]


def _temp(i):
    return lambda m: m["functions"][0]["temporaries"][i]


def _map(tensor_map, shape=None, dtype=None):
    """Launch 0 passes arg 0 (reshaped/retyped if asked) as `tensor_map`."""
    def mutate(m):
        if shape is not None:
            _arg(0)(m)["shape"] = shape
        if dtype is not None:
            _arg(0)(m)["dtype"] = dtype
        _l0(m)["args"] = [{"arg": 0, "tensor_map": tensor_map}]
    return mutate


def _dup_function(m):
    m["functions"].append(copy.deepcopy(m["functions"][0]))


# (id, mutation, the whole message after "<manifest path>: ").
BAD = [
    ("no-version", _del(_top, "version"), 'missing field "version"'),
    ("version-2", _set(_top, "version", 2),
     "version: unsupported manifest version 2 (this runtime reads version "
     "1)"),
    ("version-string", _set(_top, "version", "1"),
     "version: expected an integer, got a string"),
    ("version-float", _set(_top, "version", 1.5),
     "version: expected an integer, got a non-integer number"),
    ("no-format", _del(_top, "format"), 'missing field "format"'),
    ("bad-format", _set(_top, "format", "sass"),
     'format: unknown format "sass" (expected "ptx" or "cubin")'),
    ("no-image", _del(_top, "image"), 'missing field "image"'),
    ("empty-image", _set(_top, "image", ""), "image: must not be empty"),
    ("no-chip", _del(_top, "chip"), 'missing field "chip"'),
    ("no-functions", _del(_top, "functions"), 'missing field "functions"'),
    ("functions-object", _set(_top, "functions", {}),
     "functions: expected an array, got an object"),
    ("function-string", _set(_top, "functions", ["main"]),
     "functions[0]: expected an object, got a string"),
    ("no-name", _del(_f0, "name"), 'functions[0]: missing field "name"'),
    ("no-args", _del(_f0, "args"), 'functions[0]: missing field "args"'),
    ("no-temporaries", _del(_f0, "temporaries"),
     'functions[0]: missing field "temporaries"'),
    ("no-launches", _del(_f0, "launches"),
     'functions[0]: missing field "launches"'),
    ("args-null", _set(_f0, "args", None),
     "functions[0].args: expected an array, got null"),
    ("bad-dtype", _set(_arg(0), "dtype", "f8"),
     'functions[0].args[0].dtype: unknown dtype "f8" (expected f64, f32, '
     'f16, bf16, i32, i8 or i1)'),
    ("no-dtype", _del(_arg(1), "dtype"),
     'functions[0].args[1]: missing field "dtype"'),
    ("bad-role", _set(_arg(1), "role", "inout"),
     'functions[0].args[1].role: unknown role "inout" (expected "input", '
     '"output" or "size")'),
    ("no-role", _del(_arg(0), "role"),
     'functions[0].args[0]: missing field "role"'),
    ("no-shape", _del(_arg(0), "shape"),
     'functions[0].args[0]: missing field "shape"'),
    ("negative-dim", _set(_arg(0), "shape", [8, -1]),
     "functions[0].args[0].shape[1]: -1 is out of range [0, "
     "281474976710656]"),
    ("float-dim", _set(_arg(0), "shape", [8, 32.0]),
     "functions[0].args[0].shape[1]: expected an integer, got a non-integer "
     "number"),
    ("bool-dim", _set(_arg(0), "shape", [True]),
     "functions[0].args[0].shape[0]: expected an integer, got a boolean"),
    ("huge-shape", _set(_arg(0), "shape", [2**30, 2**30]),
     "functions[0].args[0].shape: too many elements"),
    ("temp-dtype", _set(_temp(0), "dtype", "float32"),
     'functions[0].temporaries[0].dtype: unknown dtype "float32" (expected '
     'f64, f32, f16, bf16, i32, i8 or i1)'),
    ("no-kernel", _del(_l0, "kernel"),
     'functions[0].launches[0]: missing field "kernel"'),
    ("grid-2d", _set(_l0, "grid", [8, 1]),
     "functions[0].launches[0].grid: expected 3 sizes, got 2"),
    ("block-zero", _set(_l0, "block", [0, 1, 1]),
     "functions[0].launches[0].block[0]: 0 is out of range [1, 2147483647]"),
    ("no-shared", _del(_l0, "shared_bytes"),
     'functions[0].launches[0]: missing field "shared_bytes"'),
    ("negative-shared", _set(_l0, "shared_bytes", -1),
     "functions[0].launches[0].shared_bytes: -1 is out of range [0, "
     "2147483647]"),
    ("arg-out-of-range", _set(_l0, "args", [{"arg": 0}, {"arg": 2}]),
     "functions[0].launches[0].args[1].arg: arg index 2 is out of range "
     "(the function has 2 args)"),
    ("temp-out-of-range", _set(_l0, "args", [{"temp": 1}]),
     "functions[0].launches[0].args[0].temp: temp index 1 is out of range "
     "(the function has 1 temporaries)"),
    ("arg-and-temp", _set(_l0, "args", [{"arg": 0, "temp": 0}]),
     'functions[0].launches[0].args[0]: expected exactly one of {"arg": i} '
     'or {"temp": i}, and optionally "tensor_map"'),
    ("neither", _set(_l0, "args", [{"argument": 0}]),
     'functions[0].launches[0].args[0]: expected exactly one of {"arg": i} '
     'or {"temp": i}, and optionally "tensor_map"'),
    ("map-alone", _set(_l0, "args", [{"tensor_map": {}}]),
     'functions[0].launches[0].args[0]: expected exactly one of {"arg": i} '
     'or {"temp": i}, and optionally "tensor_map"'),
    ("map-not-object", _map(3),
     "functions[0].launches[0].args[0].tensor_map: expected an object, got "
     "a number"),
    ("map-unknown-field", _map({"box": [8, 8], "swizzle": 0, "oob": 0}),
     "functions[0].launches[0].args[0].tensor_map.oob: unknown field"),
    ("map-no-box", _map({"swizzle": 0}),
     'functions[0].launches[0].args[0].tensor_map: missing field "box"'),
    ("map-no-swizzle", _map({"box": [8, 8]}),
     'functions[0].launches[0].args[0].tensor_map: missing field "swizzle"'),
    ("map-bad-swizzle", _map({"box": [8, 8], "swizzle": 16}),
     "functions[0].launches[0].args[0].tensor_map.swizzle: 16 is not 0, 32, "
     "64 or 128"),
    ("map-box-rank", _map({"box": [8], "swizzle": 0}),
     "functions[0].launches[0].args[0].tensor_map.box: has 1 dimensions; "
     "the buffer has 2"),
    ("map-box-big", _map({"box": [512, 8], "swizzle": 0}),
     "functions[0].launches[0].args[0].tensor_map.box[0]: 512 is out of "
     "range [1, 256]"),
    ("map-box-inner-16", _map({"box": [8, 2], "swizzle": 0}),
     "functions[0].launches[0].args[0].tensor_map.box: the innermost box "
     "dimension must span a multiple of 16 bytes"),
    ("map-box-over-swizzle", _map({"box": [8, 32], "swizzle": 64}),
     "functions[0].launches[0].args[0].tensor_map.box: the innermost box "
     "dimension spans more than the 64-byte swizzle"),
    ("map-rows-16", _map({"box": [8, 8], "swizzle": 0}, shape=[8, 30]),
     "functions[0].launches[0].args[0].tensor_map: the buffer's rows must "
     "be a multiple of 16 bytes for a tensor map"),
    ("map-rank-6", _map({"box": [1] * 5 + [4], "swizzle": 0},
                        shape=[1] * 5 + [32]),
     "functions[0].launches[0].args[0].tensor_map: a tensor map needs a "
     "buffer of rank 1 to 5, got 6"),
    ("map-i1", _map({"box": [8, 16], "swizzle": 0}, dtype="i1"),
     "functions[0].launches[0].args[0].tensor_map: a tensor map cannot "
     "describe an i1 buffer"),
    ("arg-string", _set(_l0, "args", [{"arg": "0"}]),
     "functions[0].launches[0].args[0].arg: expected an integer, got a "
     "string"),
    ("duplicate-function", _dup_function,
     'functions[1].name: duplicate function name "main"'),
]


@pytest.mark.parametrize("mutate,message", [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_manifest(mutate, message):
    m = copy.deepcopy(EXAMPLE)
    mutate(m)
    with pytest.raises(tc.ManifestError) as e:
        tc.parse_manifest(json.dumps(m), "m.json")
    assert str(e.value) == "m.json: " + message


def test_top_level_must_be_an_object():
    with pytest.raises(tc.ManifestError,
                       match="expected an object at the top, got an array"):
        tc.parse_manifest("[]")


def test_invalid_json_names_line_and_column():
    text = '{\n  "version": 1,\n  "format": "ptx",,\n}'
    with pytest.raises(tc.ManifestError,
                       match=r"^m.json: invalid JSON at line 3, column"):
        tc.parse_manifest(text, "m.json")


def test_duplicate_member_is_an_error():
    with pytest.raises(tc.ManifestError, match='duplicate member "version"'):
        tc.parse_manifest('{"version": 1, "version": 1}')


def test_load_manifest_from_dir_or_file(tmp_path):
    write_bundle(tmp_path, EXAMPLE)
    assert tc.load_manifest(tmp_path) == tc.load_manifest(
        tmp_path / "manifest.json")
    bad = copy.deepcopy(EXAMPLE)
    del bad["chip"]
    write_bundle(tmp_path, bad)
    with pytest.raises(tc.ManifestError) as e:
        tc.load_manifest(tmp_path)
    assert str(e.value) == (f"{tmp_path / 'manifest.json'}: missing field "
                            f'"chip"')


# ---------------------------------------------------------------------------
# No driver, no device
# ---------------------------------------------------------------------------


@pytest.fixture
def no_driver(monkeypatch, tmp_path):
    """TANG_LIBCUDA names a library that does not exist."""
    lib = tmp_path / "nowhere" / "libcuda.so.1"
    monkeypatch.setenv("TANG_LIBCUDA", str(lib))
    tc._reset_driver()
    yield f"no CUDA driver ({lib} not found)"
    tc._reset_driver()


def test_available_is_false_with_a_reason(no_driver):
    assert tc.available() is False
    assert tc.unavailable_reason() == no_driver
    with pytest.raises(tc.CudaUnavailableError) as e:
        tc.device_count()
    assert str(e.value) == no_driver


def _libcuda_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.mark.skipif(_libcuda_loads(), reason="this machine has a driver")
def test_default_library_message(monkeypatch):
    monkeypatch.delenv("TANG_LIBCUDA", raising=False)
    tc._reset_driver()
    try:
        assert not tc.available()
        assert tc.unavailable_reason() == (
            "no CUDA driver (libcuda.so.1 not found)")
    finally:
        tc._reset_driver()


STUB = pathlib.Path("/usr/local/cuda/lib64/stubs/libcuda.so")


@pytest.mark.skipif(not STUB.exists(), reason="backend cuda: no CUDA toolkit stub here")
def test_toolkit_stub_is_not_a_driver():
    """In a child process: the stub's soname is libcuda.so.1, so once loaded
    it would stand in for the real driver in this one."""
    code = f"""
import sys
sys.path.insert(0, {str(ROOT / "python")!r})
import tang.cuda as tc
assert not tc.available()
print(tc.unavailable_reason())
"""
    env = dict(os.environ, TANG_LIBCUDA=str(STUB), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"no CUDA driver ({STUB} is the CUDA toolkit's stub)\n"


def test_bundle_without_driver_raises_one_clear_error(no_driver, tmp_path):
    d = write_bundle(tmp_path / "b", EXAMPLE)
    with pytest.raises(tc.CudaUnavailableError) as e:
        tc.Bundle(d)
    assert str(e.value) == no_driver
    assert isinstance(e.value, tc.CudaError)


def test_manifest_errors_come_before_the_driver(no_driver, tmp_path):
    bad = copy.deepcopy(EXAMPLE)
    bad["functions"][0]["args"][0]["dtype"] = "f8"
    with pytest.raises(tc.ManifestError, match="unknown dtype"):
        tc.Bundle(write_bundle(tmp_path / "bad", bad))
    with pytest.raises(tc.ManifestError, match="cannot read the image"):
        tc.Bundle(write_bundle(tmp_path / "noimage", EXAMPLE, image=None))


def test_import_needs_no_torch(tmp_path):
    """tang.cuda imports, parses and fails cleanly with torch unimportable."""
    d = write_bundle(tmp_path / "b", EXAMPLE)
    code = f"""
import sys
sys.modules["torch"] = None  # any "import torch" now raises ImportError
sys.path.insert(0, {str(ROOT / "python")!r})
import tang, tang.cuda as tc
m = tc.load_manifest({str(d)!r})
assert m.function("main").outputs == (1,)
try:
    tc.Bundle({str(d)!r})
except tc.CudaUnavailableError as e:
    print("unavailable:", e)
"""
    env = dict(os.environ, TANG_LIBCUDA=str(tmp_path / "no" / "libcuda.so"),
               PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "unavailable: no CUDA driver" in r.stdout


# ---------------------------------------------------------------------------
# A mock driver
# ---------------------------------------------------------------------------

MOCK_C = r"""
/* The CUDA driver entry points tang's runtimes use, on host memory.
   "Device" pointers are host pointers; kernels are C functions named by
   ".entry NAME" lines of the image; every thread of the grid is one
   element. MOCK_CUDA_DEVICES sets the device count (default 1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

typedef struct { int kind; int maxShared; } Fn;
typedef struct { char *text; } Mod;
typedef struct { double t; } Ev;

static int initialized, retained;
static void *current;
static char primary[1];
static long live, allocs, launches;
static Fn kernels[] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};
static const char *const kernelNames[] = {"scale2", "add", "copy2",
                                          "mapinfo"};

long mock_live_allocations(void) { return live; }
long mock_allocations(void) { return allocs; }
long mock_launches(void) { return launches; }
int mock_retained(void) { return retained; }
void mock_reset(void) {
  live = allocs = launches = 0;
  retained = 0;
  current = 0;
  for (int i = 0; i < 4; ++i) kernels[i].maxShared = 0;
}

static int devices(void) {
  const char *e = getenv("MOCK_CUDA_DEVICES");
  return e ? atoi(e) : 1;
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  if (devices() == 0) return 100;
  initialized = 1;
  return 0;
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case 0: *s = "CUDA_SUCCESS"; return 0;
  case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
  case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
  case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
  case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
  case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
  }
  *s = 0;
  return 1;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  switch (r) {
  case 1: *s = "invalid argument"; return 0;
  case 201: *s = "invalid device context"; return 0;
  case 218: *s = "a PTX JIT compilation failed"; return 0;
  case 500: *s = "named symbol not found"; return 0;
  }
  *s = 0;
  return 1;
}
CUresult cuDeviceGetCount(int *n) {
  if (!initialized) return 3;
  *n = devices();
  return 0;
}
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal < 0 || ordinal >= devices()) return 101;
  *d = ordinal;
  return 0;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  (void)d;
  snprintf(name, len, "Mock GPU");
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  (void)d;
  *v = attr == 75 ? 9 : 0;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
  (void)d;
  *ctx = primary;
  ++retained;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  (void)d;
  if (retained <= 0) return 201;
  --retained;
  return 0;
}
CUresult cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
CUresult cuCtxGetDevice(CUdevice *d) {
  if (!current) return 201;
  *d = 0;
  return 0;
}
CUresult cuCtxSynchronize(void) { return current ? 0 : 201; }
CUresult cuStreamSynchronize(void *s) { (void)s; return current ? 0 : 201; }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n,
                            int *options, void **values) {
  if (!current) return 201;
  const char *text = image;
  if (strstr(text, "#error")) {
    char *log = 0;
    size_t size = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (options[i] == 5) log = values[i];
      if (options[i] == 6) size = (size_t)values[i];
    }
    if (log && size) snprintf(log, size, "mock ptxas fatal: syntax error");
    return 218;
  }
  Mod *m = malloc(sizeof(Mod));
  m->text = strdup(text);
  *mod = m;
  return 0;
}
CUresult cuModuleUnload(void *mod) {
  free(((Mod *)mod)->text);
  free(mod);
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
  char needle[256];
  snprintf(needle, sizeof needle, ".entry %s\n", name);
  if (!strstr(((Mod *)mod)->text, needle)) return 500;
  for (int i = 0; i < 4; ++i)
    if (!strcmp(name, kernelNames[i])) { *f = &kernels[i]; return 0; }
  return 500;
}
CUresult cuFuncSetAttribute(void *f, int attr, int value) {
  if (attr == 8) ((Fn *)f)->maxShared = value;
  return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  if (!current) return 201;
  if (!n) return 1;
  void *q = malloc(n);
  memset(q, 0xab, n);
  *p = (CUdeviceptr)(uintptr_t)q;
  ++live;
  ++allocs;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  --live;
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) {
  memcpy((void *)(uintptr_t)d, h, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  memcpy(h, (void *)(uintptr_t)d, n);
  return 0;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)d, v, n);
  return 0;
}

#define PARAM(T, i) ((T *)(uintptr_t)(*(CUdeviceptr *)params[i]))
/* CUDA graphs: launches on the capturing stream are recorded (their
   parameter arrays by address: the runtime keeps them), a graph replays
   them. */
typedef struct { void *f; unsigned g[3], b[3], shared; void **params; } Rec;
static Rec recorded[64];
static int nrecorded, captured;
static void *capturing;
static char streams[4];
CUresult cuStreamCreate(void **s, unsigned flags) {
  (void)flags;
  *s = &streams[1];
  return 0;
}
CUresult cuStreamDestroy_v2(void *s) { (void)s; return 0; }
CUresult cuStreamBeginCapture_v2(void *s, unsigned mode) {
  (void)mode;
  if (!s) return 1;
  capturing = s;
  nrecorded = 0;
  return 0;
}
CUresult cuStreamIsCapturing(void *s, int *status) {
  *status = s && s == capturing;
  return 0;
}
CUresult cuStreamEndCapture(void *s, void **graph) {
  if (s != capturing) return 1;
  capturing = 0;
  *graph = &streams[2];
  return 0;
}
CUresult cuGraphInstantiateWithFlags(void **exec, void *graph,
                                     unsigned long long flags) {
  (void)graph;
  (void)flags;
  *exec = &streams[3];
  ++captured;
  return 0;
}
CUresult cuGraphDestroy(void *g) { (void)g; return 0; }
CUresult cuGraphExecDestroy(void *e) { (void)e; --captured; return 0; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n,
                              void *s) {
  (void)s;
  memcpy((void *)(uintptr_t)d, h, n);
  return 0;
}
int mock_graphs(void) { return captured; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *stream, void **params, void **extra);
CUresult cuGraphLaunch(void *exec, void *s) {
  (void)exec;
  for (int i = 0; i < nrecorded; ++i) {
    Rec *r = &recorded[i];
    CUresult e = cuLaunchKernel(r->f, r->g[0], r->g[1], r->g[2], r->b[0],
                                r->b[1], r->b[2], r->shared, s, r->params, 0);
    if (e) return e;
  }
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *stream, void **params, void **extra) {
  (void)extra;
  if (!current) return 201;
  if (stream && stream == capturing) {
    if (nrecorded == 64) return 1;
    recorded[nrecorded++] = (Rec){f, {gx, gy, gz}, {bx, by, bz}, shared,
                                  params};
    return 0;
  }
  Fn *k = f;
  if (bx * by * bz > 1024) return 1;
  if (shared > 48 * 1024 && shared > (unsigned)k->maxShared) return 1;
  size_t n = (size_t)gx * gy * gz * bx * by * bz;
  for (size_t i = 0; i < n; ++i) {
    if (k->kind == 1)
      PARAM(float, 1)[i] = 2 * PARAM(float, 0)[i];
    else if (k->kind == 2)
      PARAM(float, 2)[i] = PARAM(float, 0)[i] + PARAM(float, 1)[i];
    else if (k->kind == 3)
      PARAM(uint16_t, 1)[i] = PARAM(uint16_t, 0)[i];
    else if (i < 16) /* the tensor map passed by value, word i */
      PARAM(uint64_t, 1)[i] = ((const uint64_t *)params[0])[i];
  }
  ++launches;
  return 0;
}

/* The map records its arguments: address, dtype, rank, the enums, the
   extents and strides innermost first, the box (16 bits each), whether
   every element stride is 1, and whether the map is 64-byte aligned. */
CUresult cuTensorMapEncodeTiled(uint64_t *map, int dtype, unsigned rank,
                                void *addr, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box,
                                const unsigned *elementStrides, int interleave,
                                int swizzle, int l2, int oob) {
  if (rank < 1 || rank > 5) return 1;
  memset(map, 0, 128);
  map[0] = (uint64_t)(uintptr_t)addr;
  map[1] = dtype;
  map[2] = rank;
  map[3] = swizzle | l2 << 8 | oob << 16 | interleave << 24;
  for (unsigned i = 0; i < rank; ++i) {
    map[4 + i] = dims[i];
    if (i + 1 < rank) map[9 + i] = strides[i];
    map[13] |= (uint64_t)box[i] << (12 * i);
    if (elementStrides[i] != 1) map[14] = 1;
  }
  map[15] = ((uintptr_t)map % 64 == 0) ? 0x600d : 0xbad;
  return 0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
CUresult cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof(Ev));
  return 0;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *stream) {
  (void)stream;
  ((Ev *)e)->t = now();
  return 0;
}
CUresult cuEventSynchronize(void *e) { (void)e; return 0; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  *ms = (float)((((Ev *)b)->t - ((Ev *)a)->t) * 1e3);
  return 0;
}
"""

MOCK_IMAGE = ("// a mock image\n.entry scale2\n.entry add\n.entry copy2\n"
              ".entry mapinfo\n")


def _buf(role, shape, dtype="f32"):
    return {"role": role, "shape": shape, "dtype": dtype}


def _launch(kernel, threads, args, shared=0, grid=1):
    return {"kernel": kernel, "grid": [grid, 1, 1],
            "block": [threads // grid, 1, 1], "shared_bytes": shared,
            "args": args}


MOCK_MANIFEST = {
    "version": 1, "format": "ptx", "image": "mock.ptx", "chip": "sm_90a",
    "functions": [
        {   # out = 2 * x + y, through a temporary
            "name": "main",
            "args": [_buf("input", [2, 4]), _buf("input", [2, 4]),
                     _buf("output", [2, 4])],
            "temporaries": [{"shape": [8], "dtype": "f32"}],
            "launches": [
                _launch("scale2", 8, [{"arg": 0}, {"temp": 0}], grid=2),
                _launch("add", 8, [{"temp": 0}, {"arg": 1}, {"arg": 2}]),
            ],
        },
        {   # the output first; 64 KiB of dynamic shared memory
            "name": "out_first",
            "args": [_buf("output", [4]), _buf("input", [4])],
            "temporaries": [],
            "launches": [_launch("scale2", 4, [{"arg": 1}, {"arg": 0}],
                                 shared=65536)],
        },
        {   # bf16 bit patterns copied
            "name": "copy_bf16",
            "args": [_buf("input", [3], "bf16"), _buf("output", [3], "bf16")],
            "temporaries": [],
            "launches": [_launch("copy2", 3, [{"arg": 0}, {"arg": 1}])],
        },
        {   # a tensor map of the input, by value; its words come back
            "name": "tensor_map",
            "args": [_buf("input", [3, 5, 40], "bf16"),
                     _buf("output", [16], "f64")],
            "temporaries": [],
            "launches": [_launch("mapinfo", 16, [
                {"arg": 0,
                 "tensor_map": {"box": [1, 4, 64], "swizzle": 128}},
                {"arg": 1}])],
        },
    ],
}


def _expected_map_words(address):
    """What the mock's cuTensorMapEncodeTiled records for function
    "tensor_map"'s map of a bf16 [3, 5, 40] buffer at `address`."""
    w = [0] * 16
    w[0], w[1], w[2] = address, 9, 3  # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    w[3] = 3 | 3 << 8  # SWIZZLE_128B, L2_PROMOTION_L2_256B, OOB zero
    w[4:7] = [40, 5, 3]
    w[9:11] = [80, 400]  # bytes
    w[13] = 64 | 4 << 12 | 1 << 24
    w[15] = 0x600d
    return w


@pytest.fixture(scope="session")
def mock_lib(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("backend c: no C compiler for the mock driver")
    d = tmp_path_factory.mktemp("mockcuda")
    (d / "mockcuda.c").write_text(MOCK_C)
    lib = d / "libmockcuda.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib),
                    str(d / "mockcuda.c")], check=True)
    return lib


@pytest.fixture
def mock(monkeypatch, mock_lib):
    """The mock driver in TANG_LIBCUDA, its counters reset."""
    monkeypatch.setenv("TANG_LIBCUDA", str(mock_lib))
    monkeypatch.delenv("MOCK_CUDA_DEVICES", raising=False)
    handle = ctypes.CDLL(str(mock_lib))
    handle.mock_reset()
    tc._reset_driver()
    yield handle
    tc._reset_driver()


@pytest.fixture
def mock_bundle(tmp_path):
    return write_bundle(tmp_path / "mock", MOCK_MANIFEST, image=MOCK_IMAGE)


class DeviceArray:
    """A NumPy array posing as device memory (the mock's pointers are host
    pointers) through __cuda_array_interface__."""

    def __init__(self, a):
        self.a = a

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.a.shape, "typestr": self.a.dtype.str,
                "data": (self.a.ctypes.data, False), "strides": None,
                "version": 3}


def _random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(
        np.float32)


def test_mock_available(mock):
    assert tc.available() and tc.unavailable_reason() is None
    assert tc.device_count() == 1


def test_mock_no_device(mock, monkeypatch, mock_bundle):
    monkeypatch.setenv("MOCK_CUDA_DEVICES", "0")
    assert not tc.available()
    assert tc.unavailable_reason() == "no CUDA device"
    with pytest.raises(tc.CudaUnavailableError, match="^no CUDA device$"):
        tc.Bundle(mock_bundle)


def test_mock_device_out_of_range(mock, mock_bundle):
    with pytest.raises(tc.CudaUnavailableError,
                       match=r"no CUDA device #3 \(the driver sees 1\)"):
        tc.Bundle(mock_bundle, device=3)
    assert mock.mock_retained() == 0


def test_mock_run_sequence_with_temporaries(mock, mock_bundle):
    b = tc.Bundle(mock_bundle)
    assert b.device == 0 and mock.mock_retained() == 1
    for seed in range(3):
        x, y = _random((2, 4), seed), _random((2, 4), seed + 10)
        out = np.full((2, 4), np.nan, np.float32)
        r = b.run("main", DeviceArray(x), DeviceArray(y),
                  outputs=[DeviceArray(out)], sync=True)
        assert r.a is out
        np.testing.assert_array_equal(out, 2 * x + y)
    # One temporary, allocated on the first run only; two launches a run.
    assert mock.mock_allocations() == 1
    assert mock.mock_launches() == 6
    b.close()
    assert mock.mock_live_allocations() == 0
    assert mock.mock_retained() == 0
    with pytest.raises(tc.CudaError, match="closed"):
        b.run("main", DeviceArray(x), DeviceArray(y),
              outputs=[DeviceArray(out)])


class TorchLike:
    """A NumPy array posing as a PyTorch tensor on `device` (what
    tang.cuda reads of one: data_ptr, is_cuda, is_contiguous, device,
    dtype, shape), for the device checks without torch or a second GPU."""

    class Device:
        def __init__(self, kind, index):
            self.type, self.index = kind, index

        def __str__(self):
            return self.type if self.index is None else \
                f"{self.type}:{self.index}"

    def __init__(self, a, device="cuda:0"):
        kind, _, index = device.partition(":")
        self.a, self.shape = a, a.shape
        self.device = TorchLike.Device(kind, int(index) if index else None)
        self.is_cuda = kind == "cuda"
        self.dtype = "torch.float32"

    def data_ptr(self):
        return self.a.ctypes.data

    def is_contiguous(self):
        return True


def test_mock_tensors_on_the_wrong_device(mock, monkeypatch, mock_bundle):
    """A bundle on device 1 (of the mock's two) refuses a tensor on cuda:0
    or on the host, naming the argument and both devices, before any
    launch and with its output untouched; the same tensors on cuda:1
    run."""
    monkeypatch.setenv("MOCK_CUDA_DEVICES", "2")
    x, y = _random((2, 4), 0), _random((2, 4), 1)
    out = np.full((2, 4), np.nan, np.float32)
    with tc.Bundle(mock_bundle, device=1) as b:
        assert b.device == 1
        for where, message in [
                ("cuda:0", "'main' arg #1 (input): the tensor is on cuda:0, "
                           "the bundle on cuda:1"),
                ("cpu", "'main' arg #1 (input): expected a CUDA tensor, "
                        "got one on cpu")]:
            with pytest.raises(ValueError) as e:
                b.run("main", TorchLike(x, "cuda:1"), TorchLike(y, where),
                      outputs=[TorchLike(out, "cuda:1")], sync=True)
            assert str(e.value) == message
            assert np.isnan(out).all() and mock.mock_launches() == 0
        # (On the default stream: there is no PyTorch to ask for its own.)
        b.run("main", TorchLike(x, "cuda:1"), TorchLike(y, "cuda:1"),
              outputs=[TorchLike(out, "cuda:1")], stream=0, sync=True)
        np.testing.assert_array_equal(out, 2 * x + y)


def test_mock_all_buffers_positional_and_output_first(mock, mock_bundle):
    with tc.Bundle(mock_bundle) as b:
        x = _random(4, 1)
        out = np.zeros(4, np.float32)
        b.run("out_first", DeviceArray(out), DeviceArray(x))
        np.testing.assert_array_equal(out, 2 * x)
        out2 = np.zeros(4, np.float32)
        b.run("out_first", DeviceArray(x), outputs=[DeviceArray(out2)])
        np.testing.assert_array_equal(out2, 2 * x)
        bits = np.array([0x3f80, 0xc000, 0x7fc0], np.uint16)  # 1, -2, nan
        copied = np.zeros(3, np.uint16)
        b.run("copy_bf16", DeviceArray(bits), DeviceArray(copied))
        np.testing.assert_array_equal(copied, bits)
    assert mock.mock_retained() == 0


def test_mock_tensor_map_by_value(mock, mock_bundle):
    with tc.Bundle(mock_bundle) as b:
        x = np.zeros((3, 5, 40), np.uint16)
        words = np.zeros(16, np.uint64)
        for _ in range(2):  # encoded once for the same pointer; still sent
            b.run("tensor_map", DeviceArray(x),
                  outputs=[DeviceArray(words.view(np.float64))])
            assert words.tolist() == _expected_map_words(x.ctypes.data)
        y = np.zeros((3, 5, 40), np.uint16)  # a new pointer: a new map
        b.run("tensor_map", DeviceArray(y),
              outputs=[DeviceArray(words.view(np.float64))])
        assert words.tolist() == _expected_map_words(y.ctypes.data)


def test_mock_tensor_map_needs_the_entry_point(mock, mock_bundle,
                                               monkeypatch):
    with tc.Bundle(mock_bundle) as b:
        monkeypatch.setattr(b._drv, "optional", lambda *a: None)
        with pytest.raises(tc.CudaError, match="lacks cuTensorMapEncodeTiled"):
            b.run("tensor_map", DeviceArray(np.zeros((3, 5, 40), np.uint16)),
                  outputs=[DeviceArray(np.zeros(16))])


def test_mock_adopts_the_current_context(mock, mock_bundle):
    ctx = ctypes.c_void_p()
    handle = ctypes.CDLL(os.environ["TANG_LIBCUDA"])
    handle.cuInit(0)
    handle.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0)
    handle.cuCtxSetCurrent(ctx)
    with tc.Bundle(mock_bundle) as b:
        assert b._ctx == ctx.value
        assert mock.mock_retained() == 1  # not retained again
        # Another thread (here: no current context) still runs.
        handle.cuCtxSetCurrent(None)
        x, out = _random(4, 2), np.zeros(4, np.float32)
        b.run("out_first", DeviceArray(out), DeviceArray(x))
        np.testing.assert_array_equal(out, 2 * x)
    assert mock.mock_retained() == 1


def test_mock_argument_errors(mock, mock_bundle):
    b = tc.Bundle(mock_bundle)
    x = DeviceArray(_random((2, 4), 0))
    out = DeviceArray(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError) as e:
        b.run("main", x, DeviceArray(_random((4, 2), 1)), outputs=[out])
    assert str(e.value) == ("'main' arg #1 (input): expected f32 (<f4) of "
                            "shape (2, 4), got <f4 of shape (4, 2)")
    with pytest.raises(ValueError, match=r"arg #2 \(output\): expected f32 "
                                         r"\(<f4\) of shape \(2, 4\), got "
                                         r"<f8"):
        b.run("main", x, x, outputs=[DeviceArray(np.zeros((2, 4)))])
    with pytest.raises(TypeError, match="'main' takes 2 inputs and 1 outputs, "
                                        "got 1 inputs and 1 outputs"):
        b.run("main", x, outputs=[out])
    with pytest.raises(TypeError, match=r"'main' takes 2 inputs \(or all 3 "
                                        r"buffers\), got 1"):
        b.run("main", x)
    with pytest.raises(TypeError, match="expected a CUDA tensor, got ndarray"):
        b.run("main", x, x, outputs=[np.zeros((2, 4), np.float32)])
    with pytest.raises(ValueError, match="no function 'nope'"):
        b.run("nope")
    strided = np.zeros((2, 8), np.float32)[:, ::2]  # (2, 4), strides (32, 8)

    class Strided(DeviceArray):
        @property
        def __cuda_array_interface__(self):
            d = super().__cuda_array_interface__
            d["strides"] = self.a.strides
            return d
    with pytest.raises(ValueError, match="not C-contiguous"):
        b.run("main", x, Strided(strided), outputs=[out])
    # A view at an offset: kernels access buffers 16 bytes at a time.
    shifted = _random(9, 2)[1:].reshape(2, 4)
    with pytest.raises(ValueError, match=r"arg #1 \(input\): the buffer's "
                                         r"address 0x[0-9a-f]+ is not "
                                         r"16-byte aligned"):
        b.run("main", x, DeviceArray(shifted), outputs=[out])
    b.close()


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None,
                    reason="torch is installed")
def test_mock_allocating_outputs_needs_torch(mock, mock_bundle):
    with tc.Bundle(mock_bundle) as b:
        x = DeviceArray(_random((2, 4), 0))
        with pytest.raises(TypeError, match="needs PyTorch; pass outputs="):
            b.run("main", x, x)


def test_mock_jit_error_log(mock, tmp_path):
    d = write_bundle(tmp_path / "b", MOCK_MANIFEST,
                     image=MOCK_IMAGE + "#error\n")
    with pytest.raises(tc.CudaError) as e:
        tc.Bundle(d)
    msg = str(e.value)
    assert msg.startswith(f"cannot load {d / 'mock.ptx'}: cuModuleLoadDataEx "
                          f"failed: CUDA_ERROR_INVALID_PTX (a PTX JIT "
                          f"compilation failed)")
    assert msg.endswith("JIT error log:\nmock ptxas fatal: syntax error")
    assert mock.mock_retained() == 0  # released by the failed constructor
    assert mock.mock_live_allocations() == 0


def test_mock_missing_kernel(mock, tmp_path):
    d = write_bundle(tmp_path / "b", MOCK_MANIFEST, image=".entry scale2\n")
    with pytest.raises(tc.CudaError,
                       match="function 'main': no kernel 'add' in .*mock.ptx"):
        tc.Bundle(d)
    assert mock.mock_retained() == 0


def test_mock_shared_memory_needs_the_attribute(mock, mock_bundle):
    with tc.Bundle(mock_bundle) as b:
        kernel = b._kernels["scale2"]
        assert b._shared_limit[kernel] == 65536


def test_mock_time(mock, mock_bundle):
    with tc.Bundle(mock_bundle) as b:
        x, y = _random((2, 4), 0), _random((2, 4), 1)
        out = np.zeros((2, 4), np.float32)
        ms = b.time("main", DeviceArray(x), DeviceArray(y),
                    outputs=[DeviceArray(out)], repeat=7, warmup=2)
        assert isinstance(ms, float) and ms >= 0
        assert mock.mock_launches() == 2 * 9
        np.testing.assert_array_equal(out, 2 * x + y)


# ---------------------------------------------------------------------------
# tang-cuda-run
# ---------------------------------------------------------------------------

needs_cli = pytest.mark.skipif(
    not CUDA_RUN.exists(),
    reason=f"backend cuda: {CUDA_RUN} not built (cmake -S runtime/cuda -B build-rt)")


def cli(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([str(CUDA_RUN), *map(str, args)],
                          capture_output=True, text=True, env=e, timeout=60)


@needs_cli
@pytest.mark.parametrize("mutate,message", [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_cli_manifest_errors_match_python(tmp_path, mutate, message):
    m = copy.deepcopy(EXAMPLE)
    mutate(m)
    d = write_bundle(tmp_path / "b", m)
    r = cli(d, "main")
    assert r.returncode == 1
    assert r.stderr == (f"tang-cuda-run: error: {d}/manifest.json: "
                        f"{message}\n")


@needs_cli
def test_cli_invalid_json(tmp_path):
    d = write_bundle(tmp_path / "b", '{\n  "version": 1,\n  "format": "ptx",,'
                                     '\n}')
    r = cli(d, "main")
    assert r.returncode == 1
    assert r.stderr.startswith(f"tang-cuda-run: error: {d}/manifest.json: "
                               f"invalid JSON at line 3, column")


@needs_cli
def test_cli_without_driver(tmp_path):
    d = write_bundle(tmp_path / "b", EXAMPLE)
    x = tmp_path / "x.npy"
    np.save(x, _random((8, 32), 0))
    lib = tmp_path / "no" / "libcuda.so.1"
    r = cli(d, "main", x, env={"TANG_LIBCUDA": str(lib)})
    assert r.returncode == 1
    assert r.stderr == (f"tang-cuda-run: error: no CUDA driver ({lib} not "
                        f"found)\n")


@needs_cli
def test_cli_input_checks(tmp_path):
    d = write_bundle(tmp_path / "b", EXAMPLE)
    good, wrong_shape, wrong_type = (tmp_path / n for n in
                                     ("g.npy", "s.npy", "t.npy"))
    np.save(good, _random((8, 32), 0))
    np.save(wrong_shape, _random((32, 8), 0))
    np.save(wrong_type, _random((8, 32), 0).astype(np.float16))
    r = cli(d, "main")
    assert r.stderr == ("tang-cuda-run: error: function 'main' has 1 inputs, "
                        "got 0 .npy files\n")
    r = cli(d, "main", wrong_shape)
    assert r.stderr == (f"tang-cuda-run: error: {wrong_shape}: shape (32, 8), "
                        f"but arg #0 of 'main' is (8, 32)\n")
    r = cli(d, "main", wrong_type)
    assert r.stderr == (f"tang-cuda-run: error: {wrong_type}: dtype 'f2', but "
                        f"arg #0 of 'main' is f32 (wants 'f4')\n")
    r = cli(d, "nope", good)
    assert r.stderr == ("tang-cuda-run: error: no function 'nope' in the "
                        "bundle (it has main)\n")
    r = cli(d, "main", good, "--repeat", "x")
    assert r.returncode == 2 and "--repeat wants a count" in r.stderr


@needs_cli
def test_cli_runs_on_the_mock(tmp_path, mock_lib, mock_bundle):
    x, y = _random((2, 4), 3), _random((2, 4), 4)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "out"
    r = cli(mock_bundle, "main", tmp_path / "x.npy", tmp_path / "y.npy",
            "--out", out / "deeper", "--repeat", "5",
            env={"TANG_LIBCUDA": str(mock_lib)})
    assert r.returncode == 0, r.stderr
    assert "device 0: Mock GPU (sm_90), driver 13.0; bundle chip sm_90a" in (
        r.stdout)
    assert "output #0 (arg 2): f32 (2, 4): min" in r.stdout
    assert "time of 'main' over 5 runs (2 launches each): median" in r.stdout
    got = np.load(out / "deeper" / "output_0.npy")
    assert got.dtype == np.float32 and got.shape == (2, 4)
    np.testing.assert_array_equal(got, 2 * x + y)

    # bf16 as uint16 bit patterns; 64 KiB of shared memory, output first.
    bits = np.array([0x3f80, 0xc000, 0x7fc0], np.uint16)
    np.save(tmp_path / "b.npy", bits)
    r = cli(mock_bundle, "copy_bf16", tmp_path / "b.npy", "--out", out,
            env={"TANG_LIBCUDA": str(mock_lib)})
    assert r.returncode == 0, r.stderr
    assert "output #0 (arg 1): bf16 (3,): min -2, max 1, mean -0.5 [1 " \
           "non-finite of 3]" in r.stdout
    np.testing.assert_array_equal(np.load(out / "output_0.npy"), bits)
    np.save(tmp_path / "b4.npy", np.zeros(4, np.uint16))
    r = cli(mock_bundle, "out_first", tmp_path / "b4.npy",
            env={"TANG_LIBCUDA": str(mock_lib)})
    assert "dtype 'u2', but arg #1 of 'out_first' is f32" in r.stderr
    v = _random(4, 5)
    np.save(tmp_path / "v.npy", v)
    r = cli(mock_bundle, "out_first", tmp_path / "v.npy", "--out", out,
            env={"TANG_LIBCUDA": str(mock_lib)})
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(out / "output_0.npy"), 2 * v)


@needs_cli
def test_cli_jit_error_log(tmp_path, mock_lib):
    d = write_bundle(tmp_path / "b", MOCK_MANIFEST,
                     image=MOCK_IMAGE + "#error\n")
    x = tmp_path / "x.npy"
    np.save(x, _random((2, 4), 0))
    r = cli(d, "main", x, x, env={"TANG_LIBCUDA": str(mock_lib)})
    assert r.returncode == 1
    assert r.stderr.endswith("JIT error log:\nmock ptxas fatal: syntax "
                             "error\n")
    assert "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX" in r.stderr


# ---------------------------------------------------------------------------
# On a GPU (skipped without one): the same bundles with real kernels, built
# by nvcc as PTX (JIT-compiled by the driver) and as a cubin for the device.
# ---------------------------------------------------------------------------

GPU_CU = r"""
extern "C" __global__ void scale2(const float *x, float *y) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = 2.0f * x[i];
}
extern "C" __global__ void add(const float *a, const float *b, float *c) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}
extern "C" __global__ void copy2(const unsigned short *a, unsigned short *b) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  b[i] = a[i];
}
"""

GPU_MANIFEST = copy.deepcopy(MOCK_MANIFEST)
GPU_MANIFEST["functions"].append({  # many blocks
    "name": "big",
    "args": [_buf("input", [1 << 20]), _buf("output", [1 << 20])],
    "temporaries": [],
    "launches": [_launch("scale2", 1 << 20, [{"arg": 0}, {"arg": 1}],
                         grid=4096)],
})

NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


@pytest.fixture
def real_driver(monkeypatch):
    """The machine's own driver, or skip."""
    monkeypatch.delenv("TANG_LIBCUDA", raising=False)
    tc._reset_driver()
    if not tc.available():
        pytest.skip(f"no GPU: {tc.unavailable_reason()}")
    yield
    tc._reset_driver()


_gpu_bundles = {}


def gpu_bundle(tmp_path_factory, fmt):
    """A bundle of GPU_MANIFEST with its image built by nvcc, or skip."""
    if fmt in _gpu_bundles:
        return _gpu_bundles[fmt]
    if not os.path.exists(NVCC):
        pytest.skip("no nvcc")
    d = tmp_path_factory.mktemp(f"gpu_{fmt}")
    (d / "k.cu").write_text(GPU_CU)
    if fmt == "ptx":
        flags = ["-ptx", "-arch=compute_80"]
    else:
        major, minor = tc.compute_capability(0)
        flags = ["-cubin", f"-arch=sm_{major}{minor}"]
    subprocess.run([NVCC, *flags, "-o", str(d / f"kernels.{fmt}"),
                    str(d / "k.cu")], check=True)
    m = copy.deepcopy(GPU_MANIFEST)
    m["format"], m["image"] = fmt, f"kernels.{fmt}"
    write_bundle(d, m, image=None)
    _gpu_bundles[fmt] = d
    return d


@pytest.mark.parametrize("fmt", ["ptx", "cubin"])
def test_gpu_torch(real_driver, tmp_path_factory, fmt):
    torch = pytest.importorskip("torch")
    d = gpu_bundle(tmp_path_factory, fmt)
    with tc.Bundle(d) as b:
        x = torch.randn(2, 4, device="cuda")
        y = torch.randn(2, 4, device="cuda")
        out = b.run("main", x, y)  # allocated
        assert torch.equal(out, 2 * x + y)
        poisoned = torch.full((2, 4), float("nan"), device="cuda")
        assert b.run("main", x, y, outputs=[poisoned]) is poisoned
        assert torch.equal(poisoned, 2 * x + y)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            out2 = b.run("main", y, x)
        side.synchronize()
        assert torch.equal(out2, 2 * y + x)
        v = torch.randn(4, device="cuda")
        assert torch.equal(b.run("out_first", v), 2 * v)  # 64 KiB shared
        bits = torch.tensor([1.0, -2.0, float("nan")], dtype=torch.bfloat16,
                            device="cuda")
        copied = b.run("copy_bf16", bits)
        assert copied.dtype == torch.bfloat16
        assert torch.equal(copied.view(torch.int16), bits.view(torch.int16))
        big = torch.randn(1 << 20, device="cuda")
        assert torch.equal(b.run("big", big), 2 * big)
        ms = b.time("big", big, repeat=20)
        assert 0 < ms < 100
        with pytest.raises(ValueError, match=r"'main' arg #1 \(input\): "
                                             r"expected f32 \(float32\) of "
                                             r"shape \(2, 4\), got float16"):
            b.run("main", x, y.half())
        with pytest.raises(ValueError, match="expected a CUDA tensor, got "
                                             "one on cpu"):
            b.run("main", x, y.cpu())
        with pytest.raises(ValueError, match="not contiguous"):
            b.run("main", x, torch.randn(4, 2, device="cuda").t())
        b.synchronize()


def test_gpu_jit_error_log(real_driver, tmp_path_factory, tmp_path):
    good = gpu_bundle(tmp_path_factory, "ptx")
    ptx = (good / "kernels.ptx").read_text()
    assert "ret;" in ptx
    d = write_bundle(tmp_path / "bad", json.loads(
        (good / "manifest.json").read_text()),
        image=ptx.replace("ret;", "bogus.instruction;", 1))
    # write_bundle names the image after the manifest: kernels.ptx.
    with pytest.raises(tc.CudaError) as e:
        tc.Bundle(d)
    assert "cuModuleLoadDataEx failed" in str(e.value)
    assert "JIT error log:" in str(e.value)


@needs_cli
@pytest.mark.parametrize("fmt", ["ptx", "cubin"])
def test_gpu_cli(real_driver, tmp_path_factory, tmp_path, fmt):
    d = gpu_bundle(tmp_path_factory, fmt)
    x, y = _random((2, 4), 7), _random((2, 4), 8)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    r = cli(d, "main", tmp_path / "x.npy", tmp_path / "y.npy", "--out",
            tmp_path / "out", "--repeat", "10")
    assert r.returncode == 0, r.stderr
    assert "time of 'main' over 10 runs" in r.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"),
                                  2 * x + y)
    big = _random(1 << 20, 9)
    np.save(tmp_path / "big.npy", big)
    r = cli(d, "big", tmp_path / "big.npy", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"),
                                  2 * big)


# ---------------------------------------------------------------------------
# The C++ JSON parser against Python's
# ---------------------------------------------------------------------------

_VALID = json.dumps(EXAMPLE)
INVALID_JSON = [
    ("trailing-comma", _VALID[:-1] + ",}"),
    ("single-quotes", _VALID.replace('"chip"', "'chip'")),
    ("leading-zero", _VALID.replace('"version": 1', '"version": 01')),
    ("unterminated", _VALID[:40]),
    ("control-char", _VALID.replace("sm_90a", "sm_\n90a")),
    ("nan", _VALID.replace('"version": 1', '"version": NaN')),
    ("comment", "// a comment\n" + _VALID),
    ("garbage-after", _VALID + " x"),
    ("bad-escape", _VALID.replace("sm_90a", "sm_\\x90a")),
    ("empty", ""),
]


@needs_cli
@pytest.mark.parametrize("text", [t for _, t in INVALID_JSON],
                         ids=[i for i, _ in INVALID_JSON])
def test_invalid_json_rejected_by_both(tmp_path, text):
    d = write_bundle(tmp_path / "b", text)
    with pytest.raises(tc.ManifestError, match="invalid JSON"):
        tc.load_manifest(d)
    r = cli(d, "main")
    assert r.returncode == 1
    assert r.stderr.startswith(f"tang-cuda-run: error: {d}/manifest.json: "
                               f"invalid JSON at line ")


@needs_cli
def test_escapes_and_spacing_read_alike(tmp_path):
    m = copy.deepcopy(EXAMPLE)
    m["functions"][0]["name"] = "m\u00e4in\U0001F600\t\"/"
    text = json.dumps(m, indent="\t", ensure_ascii=True).replace("\n", "\r\n")
    d = write_bundle(tmp_path / "b", text)
    with pytest.raises(ValueError) as e:
        tc.load_manifest(d).function("x")
    r = cli(d, "x")
    assert r.returncode == 1
    assert r.stderr == f"tang-cuda-run: error: {e.value}\n"


@needs_cli
def test_cli_tensor_map_by_value(tmp_path, mock_lib, mock_bundle):
    np.save(tmp_path / "x.npy", np.zeros((3, 5, 40), np.uint16))
    r = cli(mock_bundle, "tensor_map", tmp_path / "x.npy", "--out", tmp_path,
            env={"TANG_LIBCUDA": str(mock_lib)})
    assert r.returncode == 0, r.stderr
    words = np.load(tmp_path / "output_0.npy").view(np.uint64).tolist()
    assert words[0] != 0  # the device buffer's address
    assert words[1:] == _expected_map_words(0)[1:]


# ---------------------------------------------------------------------------
# Symbolic sizes (docs/Bundle.md, "Sizes")
# ---------------------------------------------------------------------------

# out = 3 x for x of any length n >= 4 (the mock kernels cover 4 elements),
# through a temporary of n elements; index argument #1 must stay below n.
SYM_MANIFEST = {
    "version": 1, "format": "ptx", "image": "mock.ptx", "chip": "sm_90a",
    "functions": [{
        "name": "sym",
        "args": [_buf("input", [[0, 1]]), {"role": "size"},
                 _buf("output", [[0, 1]])],
        "temporaries": [{"shape": [[0, 1]], "dtype": "f32"}],
        "sizes": [{"arg": 0, "dim": 0, "name": "dim 0 of %arg0"},
                  {"arg": 1, "name": "%arg1"}],
        "requirements": [{"size": [-1, 1, -1],
                          "what": "the read at row %arg1",
                          "condition": "%arg1 + 1 <= dim 0 of %arg0"}],
        "launches": [
            _launch("scale2", 4, [{"arg": 0}, {"temp": 0}, {"sizes": True}]),
            _launch("add", 4, [{"temp": 0}, {"arg": 0}, {"arg": 2},
                               {"sizes": True}]),
        ],
    }],
}


@pytest.fixture
def sym_bundle(tmp_path):
    return write_bundle(tmp_path / "sym", SYM_MANIFEST, image=MOCK_IMAGE)


def test_mock_symbolic_sizes(mock, sym_bundle):
    b = tc.Bundle(sym_bundle)
    for n in (4, 6):
        x = _random((n,), n)
        out = np.full((n,), np.nan, np.float32)
        b.run("sym", DeviceArray(x), outputs=[DeviceArray(out)],
              sizes={1: n - 1}, sync=True)
        np.testing.assert_array_equal(out[:4], 3 * x[:4])
    # A temporary and the sizes buffer per size; none for a broken one.
    assert mock.mock_allocations() == 4
    x = DeviceArray(_random((4,), 1))
    out = [DeviceArray(np.zeros(4, np.float32))]
    with pytest.raises(ValueError, match=(
            r"the read at row %arg1 only if %arg1 \+ 1 <= dim 0 of %arg0, "
            r"but dim 0 of %arg0 = 4, %arg1 = 4; nothing ran")):
        b.run("sym", x, outputs=out, sizes={1: 4})
    with pytest.raises(ValueError, match=r"give it with --size arg1=N"):
        b.run("sym", x, outputs=out)
    with pytest.raises(ValueError, match="has symbolic sizes"):
        b.function("sym")
    assert mock.mock_allocations() == 4
    b.close()
    assert mock.mock_live_allocations() == 0


@needs_cli
def test_cli_symbolic_sizes(tmp_path, mock_lib, sym_bundle):
    x = _random((5,), 7)
    np.save(tmp_path / "x.npy", x)
    env = {"TANG_LIBCUDA": str(mock_lib)}
    r = cli(sym_bundle, "sym", tmp_path / "x.npy", "--size", "arg1=2",
            "--out", tmp_path / "out", env=env)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "output_0.npy")
    assert got.shape == (5,)
    np.testing.assert_array_equal(got[:4], 3 * x[:4])
    r = cli(sym_bundle, "sym", tmp_path / "x.npy", "--size", "arg1=5",
            env=env)
    assert r.returncode == 1
    assert ("the read at row %arg1 only if %arg1 + 1 <= dim 0 of %arg0, but "
            "dim 0 of %arg0 = 5, %arg1 = 5; nothing ran") in r.stderr
    r = cli(sym_bundle, "sym", tmp_path / "x.npy", env=env)
    assert "argument #1 is a size (%arg1): give it with --size arg1=N" in (
        r.stderr)
    r = cli(sym_bundle, "sym", tmp_path / "x.npy", "--size", "arg1=1",
            "--size", "arg7=1", env=env)
    assert "--size arg7 names no size argument" in r.stderr


# x doubled in place: the output is the donated input's buffer.
ALIAS_MANIFEST = {
    "version": 1, "format": "ptx", "image": "mock.ptx", "chip": "sm_90a",
    "functions": [{
        "name": "inplace",
        "args": [_buf("input", [4]), dict(_buf("output", [4]), alias=0)],
        "temporaries": [],
        "launches": [_launch("scale2", 4, [{"arg": 0}, {"arg": 0}])],
    }],
}


def test_mock_output_updated_in_place(mock, tmp_path):
    b = tc.Bundle(write_bundle(tmp_path / "alias", ALIAS_MANIFEST,
                               image=MOCK_IMAGE))
    x = _random((4,), 3)
    want = 2 * x
    other = DeviceArray(np.zeros(4, np.float32))
    got = b.run("inplace", DeviceArray(x), outputs=[other], sync=True)
    assert got.a is x  # the input, updated
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(other.a, np.zeros(4, np.float32))
    assert mock.mock_allocations() == 0
    b.close()


@pytest.mark.parametrize("alias,message", [
    (1, "arg 1 is not an input of the output's shape and dtype"),
    (7, "arg 7 is not an input of the output's shape and dtype"),
])
def test_bad_alias(tmp_path, alias, message):
    m = copy.deepcopy(ALIAS_MANIFEST)
    m["functions"][0]["args"][1]["alias"] = alias
    with pytest.raises(tc.ManifestError,
                       match=r"functions\[0\]\.args\[1\]\.alias: " + message):
        tc.parse_manifest(json.dumps(m))
    if CUDA_RUN.exists():
        d = write_bundle(tmp_path / "bad", m, image=MOCK_IMAGE)
        np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
        r = cli(d, "inplace", tmp_path / "x.npy")
        assert r.returncode != 0
        assert "functions[0].args[1].alias: " + message in r.stderr


@needs_cli
def test_cli_output_updated_in_place(tmp_path, mock_lib):
    d = write_bundle(tmp_path / "alias", ALIAS_MANIFEST, image=MOCK_IMAGE)
    x = _random((4,), 4)
    np.save(tmp_path / "x.npy", x)
    r = cli(d, "inplace", tmp_path / "x.npy", "--out", tmp_path / "out",
            env={"TANG_LIBCUDA": str(mock_lib)})
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"),
                                  2 * x)


# out = 2 * c for a tensor constant c whose contents the bundle carries.
DATA_MANIFEST = {
    "version": 1, "format": "ptx", "image": "mock.ptx", "chip": "sm_90a",
    "functions": [{
        "name": "constant",
        "args": [_buf("output", [4])],
        "temporaries": [{"shape": [4], "dtype": "f32", "data": "c.bin"}],
        "launches": [_launch("scale2", 4, [{"temp": 0}, {"arg": 0}])],
    }],
}


def test_mock_constant_data(mock, tmp_path):
    d = write_bundle(tmp_path / "data", DATA_MANIFEST, image=MOCK_IMAGE)
    c = _random((4,), 9)
    c.tofile(d / "c.bin")
    b = tc.Bundle(d)
    out = DeviceArray(np.zeros(4, np.float32))
    b.run("constant", outputs=[out], sync=True)
    np.testing.assert_array_equal(out.a, 2 * c)
    b.close()
    (d / "c.bin").write_bytes(b"\0" * 12)
    b = tc.Bundle(d)
    with pytest.raises(tc.ManifestError,
                       match=r"c.bin: 12 bytes, but the constant of "
                             r"'constant' takes 16"):
        b.run("constant", outputs=[out])
    b.close()


@needs_cli
def test_cli_constant_data(tmp_path, mock_lib):
    d = write_bundle(tmp_path / "data", DATA_MANIFEST, image=MOCK_IMAGE)
    c = _random((4,), 10)
    c.tofile(d / "c.bin")
    env = {"TANG_LIBCUDA": str(mock_lib)}
    r = cli(d, "constant", "--out", tmp_path / "out", env=env)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"),
                                  2 * c)
    (d / "c.bin").write_bytes(b"\0" * 12)
    r = cli(d, "constant", env=env)
    assert r.returncode == 1
    assert "c.bin: 12 bytes, but the constant of 'constant' takes 16" in (
        r.stderr)


def test_bad_data_name():
    m = copy.deepcopy(DATA_MANIFEST)
    m["functions"][0]["temporaries"][0]["data"] = "../etc/passwd"
    with pytest.raises(tc.ManifestError,
                       match=r"temporaries\[0\]\.data: expected the name of "
                             r"a file of the bundle"):
        tc.parse_manifest(json.dumps(m))


# ---------------------------------------------------------------------------
# Index checks (docs/Bundle.md, "Index checks")
# ---------------------------------------------------------------------------

# out = 2 x, behind a size argument (#0) and token ids (#1) that a trap
# gather indexes a dimension of 10 with: after the size argument goes, the
# ids are argument #0 of the resolved function.
INDEX_MANIFEST = {
    "version": 1, "format": "ptx", "image": "mock.ptx", "chip": "sm_90a",
    "functions": [{
        "name": "lookup",
        "args": [{"role": "size"}, _buf("input", [3], "i32"),
                 _buf("input", [4]), _buf("output", [4])],
        "temporaries": [],
        "sizes": [{"arg": 0, "name": "%arg0"}],
        "requirements": [],
        "index_checks": [{"arg": 1, "bound": 10,
                          "what": "coordinate #0 of the gather"}],
        "launches": [_launch("scale2", 4, [{"arg": 2}, {"arg": 3}])],
    }],
}


def test_mock_index_checks(mock, tmp_path):
    b = tc.Bundle(write_bundle(tmp_path / "ids", INDEX_MANIFEST,
                               image=MOCK_IMAGE))
    x = _random((4,), 5)
    out = DeviceArray(np.zeros(4, np.float32))
    ids = np.array([0, 9, 4], np.int32)
    b.run("lookup", DeviceArray(ids), DeviceArray(x), outputs=[out],
          sizes={0: 1}, sync=True)
    np.testing.assert_array_equal(out.a, 2 * x)
    launches = mock.mock_launches()
    for bad, e in ((10, 1), (-3, 1)):
        ids[e] = bad
        out.a[:] = 0
        with pytest.raises(IndexError, match=(
                rf"'lookup' arg #0 \(input\): element {e} is {bad}, outside "
                r"\[0, 10\) for coordinate #0 of the gather; nothing ran")):
            b.run("lookup", DeviceArray(ids), DeviceArray(x), outputs=[out],
                  sizes={0: 1})
        assert mock.mock_launches() == launches
        assert not out.a.any()
    # Unchecked on request (a graph capture cannot read back).
    b.run("lookup", DeviceArray(ids), DeviceArray(x), outputs=[out],
          sizes={0: 1}, sync=True, check_indices=False)
    assert mock.mock_launches() == launches + 1
    b.close()


@pytest.mark.parametrize("check,message", [
    ({"arg": 2, "bound": 10, "what": "w"}, "arg: names no integer input"),
    ({"arg": 1, "bound": 0, "what": "w"},
     r"bound: 0 is out of range \[1, 281474976710656\]"),
    ({"arg": 1, "what": "w"}, 'expected {"arg", "bound", "what"}'),
    ({"arg": 1, "bound": 3}, 'missing field "what"'),
])
def test_bad_index_check(tmp_path, mock, check, message):
    m = copy.deepcopy(INDEX_MANIFEST)
    m["functions"][0]["index_checks"] = [check]
    b = tc.Bundle(write_bundle(tmp_path / "bad", m, image=MOCK_IMAGE))
    ids = DeviceArray(np.zeros(3, np.int32))
    x = DeviceArray(np.zeros(4, np.float32))
    with pytest.raises(tc.ManifestError) as e:
        b.run("lookup", ids, x, outputs=[x], sizes={0: 1})
    assert "index_checks[0]" in str(e.value)
    assert re.search(message, str(e.value)), str(e.value)
    if CUDA_RUN.exists():
        np.save(tmp_path / "ids.npy", np.zeros(3, np.int32))
        np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
        # The C++ reader checks the manifest as written (arg #1 before
        # the size argument goes).
        r = cli(tmp_path / "bad", "lookup", tmp_path / "ids.npy",
                tmp_path / "x.npy", "--size", "arg0=1")
        assert r.returncode != 0
        assert "index_checks[0]" in r.stderr


@needs_cli
def test_cli_index_checks(tmp_path, mock_lib):
    d = write_bundle(tmp_path / "ids", INDEX_MANIFEST, image=MOCK_IMAGE)
    x = _random((4,), 6)
    np.save(tmp_path / "x.npy", x)
    env = {"TANG_LIBCUDA": str(mock_lib)}
    np.save(tmp_path / "ids.npy", np.array([0, 9, 4], np.int32))
    r = cli(d, "lookup", tmp_path / "ids.npy", tmp_path / "x.npy", "--size",
            "arg0=1", "--out", tmp_path / "out", env=env)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "output_0.npy"),
                                  2 * x)
    np.save(tmp_path / "ids.npy", np.array([0, 4, -7], np.int32))
    r = cli(d, "lookup", tmp_path / "ids.npy", tmp_path / "x.npy", "--size",
            "arg0=1", "--out", tmp_path / "bad", env=env)
    assert r.returncode == 1
    assert ("input #0 (" in r.stderr and "element 2 is -7, outside [0, 10) "
            "for coordinate #0 of the gather; nothing ran") in r.stderr
    assert not (tmp_path / "bad").exists()


# ---------------------------------------------------------------------------
# CUDA graphs (Bundle.capture)
# ---------------------------------------------------------------------------

def test_mock_capture_and_replay(mock, sym_bundle):
    b = tc.Bundle(sym_bundle)
    x = _random((6,), 8)
    out = np.full((6,), np.nan, np.float32)
    # Captured at the largest index value (5); nothing runs.
    g = b.capture("sym", DeviceArray(x), outputs=[DeviceArray(out)],
                  sizes={1: 5})
    assert mock.mock_launches() == 0 and mock.mock_graphs() == 1
    assert np.isnan(out).all()
    g.replay()
    assert mock.mock_launches() == 2
    np.testing.assert_array_equal(out[:4], 3 * x[:4])
    # The replay reads the tensors as they are now.
    x[:] = _random((6,), 9)
    assert not b._prepared   # the graph owns its buffers
    sizes = ctypes.cast(g._p.temps[-1], ctypes.POINTER(ctypes.c_int32))
    assert sizes[1] == 5
    g.replay(sizes={1: 2})
    np.testing.assert_array_equal(out[:4], 3 * x[:4])
    assert (sizes[0], sizes[1]) == (6, 2)   # the sizes buffer rewritten
    g.replay()
    assert sizes[1] == 5
    with pytest.raises(ValueError, match="only if %arg1 \\+ 1 <= dim 0"):
        g.replay(sizes={1: 6})
    with pytest.raises(ValueError, match="does not fit the kernels' 32-bit"):
        g.replay(sizes={1: 2**31})
    assert mock.mock_launches() == 6
    # A run at the captured sizes has buffers of its own: the graph's
    # sizes buffer, rewritten by a replay, is not its.
    g.replay(sizes={1: 2})
    b.run("sym", DeviceArray(x), outputs=[DeviceArray(out)], sizes={1: 5},
          sync=True)
    run_sizes = ctypes.cast(next(iter(b._prepared.values())).temps[-1],
                            ctypes.POINTER(ctypes.c_int32))
    assert (run_sizes[1], sizes[1]) == (5, 2)
    live = mock.mock_live_allocations()
    g.close()
    assert mock.mock_graphs() == 0
    assert mock.mock_live_allocations() == live - 2   # its temporaries
    with pytest.raises(tc.CudaError, match="closed"):
        g.replay()
    # Bundle.close closes the graphs it made.
    g2 = b.capture("sym", DeviceArray(x), outputs=[DeviceArray(out)],
                   sizes={1: 5})
    assert mock.mock_graphs() == 1
    b.close()
    assert mock.mock_graphs() == 0 and mock.mock_live_allocations() == 0
    del g2


def test_mock_capture_checks_indices(mock, tmp_path):
    b = tc.Bundle(write_bundle(tmp_path / "ids", INDEX_MANIFEST,
                               image=MOCK_IMAGE))
    ids = np.array([0, 9, 4], np.int32)
    x = _random((4,), 10)
    out = DeviceArray(np.zeros(4, np.float32))
    g = b.capture("lookup", DeviceArray(ids), DeviceArray(x), outputs=[out],
                  sizes={0: 1})
    g.replay()
    np.testing.assert_array_equal(out.a, 2 * x)
    ids[2] = 10
    with pytest.raises(IndexError, match="element 2 is 10, outside"):
        g.replay()
    assert mock.mock_launches() == 1
    g.replay(check_indices=False)   # the caller vouches for them
    assert mock.mock_launches() == 2
    with pytest.raises(IndexError, match="element 2 is 10"):
        b.capture("lookup", DeviceArray(ids), DeviceArray(x), outputs=[out],
                  sizes={0: 1})
    g.close()
    b.close()


@needs_cli
def test_cli_refuses_bad_inputs_before_the_driver(tmp_path, no_driver):
    """tang-cuda-run checks its inputs (dtype, order, truncation, presence)
    and the manifest before it loads the driver: the same errors here as on
    a GPU machine."""
    from differential import check_input_errors
    tang_bin = pathlib.Path(os.environ.get("TANG_BIN", ROOT / "build" / "bin"))
    check_input_errors(tang_bin, "tang-lower-cuda", "ptx",
                       lambda bundle, args: cli(bundle, *args),
                       tmp_path, runs=False, options="format=isa")
