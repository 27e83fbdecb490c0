"""The programs of the Python front end's GPU check, shared by
bench/prepare_python.py (compiles them here, filling the bundle cache) and
bench/python_check.py (runs them on the GPU from that cache: tang.compile
finds every bundle by its program's hash, no tang-opt needed there).

Each operator of tang.nn at a GPU-sized shape, a transformer block
(forward, against eager PyTorch and torch.compile), and the block trained
through tang.autograd.
"""

import math
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
CACHE = ROOT / "gpu-work" / "python-cache"
os.environ.setdefault("TANG_CACHE_DIR", str(CACHE))

import tang  # noqa: E402
from tang import f32, i32, nn  # noqa: E402

# The block: one sequence of T tokens, model width D, H heads, MLP width F.
T, D, H, F = 512, 512, 8, 1536
# Training: a smaller block, 20 SGD steps.
TT, TD, TH, TF = 128, 128, 4, 256


def block_function(t, d, h, f, name):
    def block(x: f32[t, d], wn1: f32[d], wq: f32[d, d], wk: f32[d, d],
              wv: f32[d, d], wo: f32[d, d], wn2: f32[d], w1: f32[d, f],
              w3: f32[d, f], w2: f32[f, d]):
        return nn.transformer_block(x, wn1, wq, wk, wv, wo, wn2, w1, w3, w2,
                                    heads=h)
    block.__name__ = name
    return tang.function(block)


BLOCK = block_function(T, D, H, F, "block")
TRAIN_BLOCK = block_function(TT, TD, TH, TF, "train_block")


def block_shapes(t, d, f):
    return [(t, d), (d,), (d, d), (d, d), (d, d), (d, d), (d,), (d, f),
            (d, f), (f, d)]


def library():
    """name -> (tang.Function, input specs): ("f", shape) random floats,
    ("ids", shape, bound) token ids."""
    @tang.function
    def rms_norm(x: f32[4096, 1024], w: f32[1024]):
        return nn.rms_norm(x, w)

    @tang.function
    def layer_norm(x: f32[4096, 1024], w: f32[1024], b: f32[1024]):
        return nn.layer_norm(x, w, b)

    @tang.function
    def softmax(x: f32[4096, 1024]):
        return nn.softmax(x)

    @tang.function
    def linear(x: f32[1024, 1024], w: f32[1024, 1024], b: f32[1024]):
        return nn.linear(x, w, b)

    @tang.function
    def gelu(x: f32[4096, 1024]):
        return nn.gelu(x)

    @tang.function
    def attention(q: f32[16, 512, 64], k: f32[4, 512, 64],
                  v: f32[4, 512, 64]):
        return nn.attention(q, k, v, causal=True)

    @tang.function
    def rope(x: f32[512, 16, 64]):
        return nn.rope(x)

    @tang.function
    def swiglu(x: f32[512, 512], wg: f32[512, 1536], wu: f32[512, 1536],
               wd: f32[1536, 512]):
        return nn.swiglu(x, wg, wu, wd)

    @tang.function
    def embedding(table: f32[32000, 512], ids: i32[2048]):
        return nn.embedding(table, ids, policy="clamp")

    @tang.function
    def cross_entropy(logits: f32[2048, 4096], ids: i32[2048]):
        return nn.cross_entropy(logits, ids, policy="clamp")

    @tang.function
    def causal_conv1d(x: f32[1024, 2048], w: f32[1024, 4]):
        return nn.causal_conv1d(x, w)

    fl = lambda *s: ("f", s)  # noqa: E731
    return {
        "rms_norm": (rms_norm, [fl(4096, 1024), fl(1024)]),
        "layer_norm": (layer_norm, [fl(4096, 1024), fl(1024), fl(1024)]),
        "softmax": (softmax, [fl(4096, 1024)]),
        "linear": (linear, [fl(1024, 1024), fl(1024, 1024), fl(1024)]),
        "gelu": (gelu, [fl(4096, 1024)]),
        "attention": (attention, [fl(16, 512, 64), fl(4, 512, 64),
                                  fl(4, 512, 64)]),
        "rope": (rope, [fl(512, 16, 64)]),
        "swiglu": (swiglu, [fl(512, 512), fl(512, 1536), fl(512, 1536),
                            fl(1536, 512)]),
        "embedding": (embedding, [fl(32000, 512), ("ids", (2048,), 32000)]),
        "cross_entropy": (cross_entropy, [fl(2048, 4096),
                                          ("ids", (2048,), 4096)]),
        "causal_conv1d": (causal_conv1d, [fl(1024, 2048), fl(1024, 4)]),
    }


# ---------------------------------------------------------------------------
# PyTorch references (float64 for checking, f32 modules for timing)
# ---------------------------------------------------------------------------

def rope_angles(torch, x, theta=10000.0):
    """RoPE's angles pos * theta^(-2 (d mod D/2) / D) for x [L, H, D], and
    x rotated by half (-x2, x1)."""
    L, _, Dd = x.shape
    half = Dd // 2
    idx = torch.arange(Dd, device=x.device, dtype=x.dtype)
    freq = theta ** (-2.0 * (idx % half) / Dd)
    ang = torch.arange(L, device=x.device, dtype=x.dtype)[:, None, None] * freq
    return ang, torch.cat([-x[..., half:], x[..., :half]], -1)


def torch_references(torch):
    F_ = torch.nn.functional

    def rms(x, w, eps=1e-6):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w

    def attention(q, k, v, causal=True):
        g = q.shape[0] // k.shape[0]
        k = k.repeat_interleave(g, 0)
        v = v.repeat_interleave(g, 0)
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if causal:
            L, S = s.shape[-2:]
            i = torch.arange(L, device=s.device)[:, None]
            j = torch.arange(S, device=s.device)[None, :]
            s = s.masked_fill(j > i + (S - L), float("-inf"))
        return torch.softmax(s, -1) @ v

    def rope(x):
        ang, rot = rope_angles(torch, x)
        return x * torch.cos(ang) + rot * torch.sin(ang)

    def swiglu(x, wg, wu, wd):
        return (F_.silu(x @ wg) * (x @ wu)) @ wd

    def block(x, wn1, wq, wk, wv, wo, wn2, w1, w3, w2, heads):
        t_, d_ = x.shape
        dh = d_ // heads
        xn = rms(x, wn1)
        q, k, v = ((xn @ w).reshape(t_, heads, dh).transpose(0, 1)
                   for w in (wq, wk, wv))
        o = attention(q, k, v).transpose(0, 1).reshape(t_, d_)
        h = x + o @ wo
        return h + swiglu(rms(h, wn2), w1, w3, w2)

    def cross_entropy(logits, ids):
        return F_.cross_entropy(logits, ids.long())

    return {
        "rms_norm": rms,
        "layer_norm": lambda x, w, b: F_.layer_norm(x, x.shape[-1:], w, b,
                                                   1e-5),
        "softmax": lambda x: torch.softmax(x, -1),
        "linear": lambda x, w, b: x @ w + b,
        "gelu": lambda x: F_.gelu(x),
        "attention": attention,
        "rope": rope,
        "swiglu": swiglu,
        "embedding": lambda table, ids: table[ids.long()],
        "cross_entropy": cross_entropy,
        "causal_conv1d": lambda x, w: F_.conv1d(
            F_.pad(x[None], (w.shape[1] - 1, 0)), w[:, None, :],
            groups=x.shape[0])[0],
        "block": block,
    }


def sensitivities(torch):
    """name -> fn(float64 inputs) -> how far each output element moves when
    the program's intermediates round to f32, for operators whose
    conditioning the storage-rounding rule does not cover: RoPE's angle
    pos * freq is an f32 value of magnitude up to L, so its rounding moves
    the output by (|x| + |rotated x|) |angle| u."""
    def rope(x):
        ang, rot = rope_angles(torch, x)
        return (x.abs() + rot.abs()) * ang.abs() * 2.0 ** -24
    return {"rope": rope}


def make_inputs(torch, specs, seed, device="cuda"):
    g = torch.Generator(device="cpu").manual_seed(seed)
    out = []
    for s in specs:
        if s[0] == "ids":
            _, shape, bound = s
            out.append(torch.randint(0, bound, shape, generator=g,
                                     dtype=torch.int32).to(device))
        else:
            out.append((torch.rand(s[1], generator=g) * 2 - 1)
                       .to(torch.float32).to(device))
    return out


def block_inputs(torch, t, d, f, seed, device="cuda"):
    xs = make_inputs(torch, [("f", s) for s in block_shapes(t, d, f)], seed,
                     device)
    # Weights scaled like an initialisation (1/sqrt(fan-in)).
    return [x if x.dim() == 1 or k == 0 else x / math.sqrt(x.shape[0])
            for k, x in enumerate(xs)]


# ---------------------------------------------------------------------------
# The block as a PyTorch module, for torch.compile(backend="tang")
# ---------------------------------------------------------------------------

#: The torch.compile block: (T, D, H, F); "ci" is small enough that its
#: captured aten graph, inputs and eager output are test fixtures
#: (test/Python/Inputs/fx_block_ci.*).
FX_SIZES = {"ci": (16, 32, 4, 64), "gpu": (512, 512, 8, 1536)}


def torch_block_module(torch, t_, d, h, f, seed):
    F_ = torch.nn.functional

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(seed)

            def lin(i, o):
                m = torch.nn.Linear(i, o, bias=False)
                with torch.no_grad():
                    m.weight.copy_((torch.rand(o, i, generator=g) * 2 - 1)
                                   / math.sqrt(i))
                return m
            self.wn1 = torch.nn.Parameter(torch.rand(d, generator=g) + 0.5)
            self.wn2 = torch.nn.Parameter(torch.rand(d, generator=g) + 0.5)
            self.wq, self.wk, self.wv, self.wo = (lin(d, d) for _ in range(4))
            self.w1, self.w3, self.w2 = lin(d, f), lin(d, f), lin(f, d)

        @staticmethod
        def rms(x, w):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

        def forward(self, x):
            b, n, _ = x.shape
            xn = self.rms(x, self.wn1)
            q, k, v = (m(xn).view(b, n, h, d // h).transpose(1, 2)
                       for m in (self.wq, self.wk, self.wv))
            o = F_.scaled_dot_product_attention(q, k, v, is_causal=True)
            hh = x + self.wo(o.transpose(1, 2).reshape(b, n, d))
            hn = self.rms(hh, self.wn2)
            return hh + self.w2(F_.silu(self.w1(hn)) * self.w3(hn))
    return Block()


def capture_aten(torch, module, x):
    """The forward aten graph AOT autograd gives for ``module(x)`` (no
    grad), described (tang.fx.describe), and its inputs in placeholder
    order (NumPy)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd
    from tang import fx
    graphs = []

    def fw(g, _fake_inputs):
        desc = fx.describe(g)

        def run(*args):   # the real inputs, at the first call
            graphs.append((desc, [a.detach().cpu().numpy() for a in args]))
            return g.forward(*args)
        return make_boxed_func(run)
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(module, backend=aot_autograd(fw_compiler=fw))(x)
    torch._dynamo.reset()
    if len(graphs) != 1:
        raise RuntimeError(f"captured {len(graphs)} graphs, expected one")
    return graphs[0]
