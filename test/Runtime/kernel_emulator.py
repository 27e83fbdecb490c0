"""Runs tang's CUDA kernel form on the CPU, for tests without a GPU.

The input is `tang-opt --convert-tang-to-gpu ... --mlir-print-op-generic`
output: a host function (allocations, stores into the sizes buffer,
gpu.launch_func) and a gpu.module of kernels. The emulator runs the host
function; each launch runs its blocks one after another, a block's warps
side by side between top-level barriers, a warp's 32 lanes as NumPy arrays
(one element per lane; each warp a generator that yields at barriers). It
implements the operations the cooperative and sm_80 tensor-core kernels use
(arith, math, scf, memref, vector, gpu.shuffle, gpu.barrier, dynamic shared
memory, nvgpu cp.async and ldmatrix, nvvm.mma.sync m16n8k16, nvvm.prmt)
with their PTX semantics: mma.sync's and ldmatrix's fragment layouts as the
PTX ISA gives them (products exact, sums in f64 then rounded to f32), a
cp.async landing only when its group is waited for, shuffles over the
warp, divergent scf.if under lane masks, loops whose lanes leave at
different trips under a narrowing mask.
Every load and store of an active lane is bounds-checked (an out-of-range
access raises EmulatorError, like compute-sanitizer's memcheck); a shuffle,
mma.sync, ldmatrix or barrier with some of the warp's lanes inactive is an
error too (it would hang or read undefined registers on a GPU). Not
implemented: wgmma, TMA, mbarriers (sm_90a kernels).

    emu = KernelFormEmulator(generic_text)
    outputs = emu.run("main", [array, ...], sizes=[300])

Inputs are NumPy arrays (bf16 tensors as float32 values, rounded here);
outputs come back as float32 (bf16/f16 widened), integer outputs as they
are. Slow (about ten microseconds per operation and warp): for small
shapes.
"""

import re

import numpy as np

LANES = 32


class EmulatorError(Exception):
    pass


#===----------------------------------------------------------------------===#
# Parsing the generic form
#===----------------------------------------------------------------------===#

class Op:
    __slots__ = ("results", "name", "operands", "attrs", "regions",
                 "in_types", "out_types")

    def __init__(self):
        self.results, self.operands, self.regions = [], [], []
        self.attrs, self.in_types, self.out_types = "", [], []


class Block:
    __slots__ = ("args", "arg_types", "ops")

    def __init__(self):
        self.args, self.arg_types, self.ops = [], [], []


def split_top(s, sep=","):
    """`s` split at `sep` outside brackets."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


class Parser:
    def __init__(self, text):
        self.s, self.i = text, 0

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def peek(self, t):
        self.ws()
        return self.s.startswith(t, self.i)

    def expect(self, t):
        self.ws()
        if not self.s.startswith(t, self.i):
            raise EmulatorError(f"parse: expected {t!r} at "
                                f"{self.s[self.i:self.i + 60]!r}")
        self.i += len(t)

    def balanced(self, open_, close):
        """The text from an opening bracket to its match (inclusive)."""
        self.ws()
        start, depth = self.i, 0
        while True:
            ch = self.s[self.i]
            if ch == '"':
                self.i = self.s.index('"', self.i + 1)
            elif self.s.startswith("->", self.i):
                self.i += 1
            elif ch in "(<[{":
                depth += 1
            elif ch in ")>]}":
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return self.s[start:self.i]
            self.i += 1

    def type_(self):
        """One type: up to a top-level ',' ')' or end of line."""
        self.ws()
        start, depth = self.i, 0
        while self.i < len(self.s):
            ch = self.s[self.i]
            if self.s.startswith("->", self.i):
                self.i += 2
                continue
            if ch in "(<[{":
                depth += 1
            elif ch in ")>]}":
                if depth == 0:
                    break
                depth -= 1
            elif ch in ",\n" and depth == 0:
                break
            self.i += 1
        return self.s[start:self.i].strip()

    def type_list(self):
        if self.peek("("):
            self.expect("(")
            out = []
            while not self.peek(")"):
                out.append(self.type_())
                if self.peek(","):
                    self.expect(",")
            self.expect(")")
            return out
        return [self.type_()]

    def op(self):
        op = Op()
        self.ws()
        if self.s[self.i] == "%":
            m = re.compile(r"%([\w.$-]+)(?::(\d+))?").match(self.s, self.i)
            self.i = m.end()
            n = int(m.group(2) or 1)
            op.results = ([m.group(1)] if n == 1 else
                          [f"{m.group(1)}#{k}" for k in range(n)])
            self.expect("=")
        self.expect('"')
        end = self.s.index('"', self.i)
        op.name = self.s[self.i:end]
        self.i = end + 1
        self.expect("(")
        while not self.peek(")"):
            m = re.compile(r"%([\w.$-]+(?:#\d+)?)").match(self.s, self.i)
            op.operands.append(m.group(1))
            self.i = m.end()
            if self.peek(","):
                self.expect(",")
        self.expect(")")
        if self.peek("<{"):
            op.attrs += self.balanced("<", ">")
        if self.peek("({"):
            self.expect("(")
            while True:
                op.regions.append(self.region())
                if self.peek(","):
                    self.expect(",")
                    continue
                break
            self.expect(")")
        if self.peek("{"):
            op.attrs += self.balanced("{", "}")
        self.expect(":")
        op.in_types = self.type_list()
        self.expect("->")
        op.out_types = [] if self.peek("()") and self.expect("()") is None \
            else self.type_list()
        return op

    def region(self):
        self.expect("{")
        blocks = []
        block = Block()
        while not self.peek("}"):
            if self.peek("^"):
                if block.ops or block.args:
                    blocks.append(block)
                    block = Block()
                self.i = self.s.index("(", self.i) + 1
                while not self.peek(")"):
                    m = re.compile(r"%([\w.$-]+)\s*:").match(self.s, self.i)
                    self.i = m.end()
                    block.args.append(m.group(1))
                    block.arg_types.append(self.type_())
                    if self.peek(","):
                        self.expect(",")
                self.expect(")")
                self.expect(":")
                continue
            block.ops.append(self.op())
        self.expect("}")
        blocks.append(block)
        if len(blocks) != 1:
            raise EmulatorError("regions of more than one block")
        return blocks[0]


def attr(op, key):
    """A string attribute's value (sym_name)."""
    m = re.search(r"\b" + key + r' = "([^"]*)"', op.attrs)
    return m.group(1) if m else None


#===----------------------------------------------------------------------===#
# Types and memory
#===----------------------------------------------------------------------===#

SCALARS = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
           "f64": np.float64, "i32": np.int32, "i64": np.int64,
           "index": np.int64, "i1": np.bool_, "i8": np.int8, "i16": np.int16}


def element_of(t):
    """(element type, vector length or None) of a scalar or vector type."""
    m = re.fullmatch(r"vector<(\d+)x(\w+)>", t)
    if m:
        return m.group(2), int(m.group(1))
    return t, None


def memref_shape(t):
    """(static shape, element type) of a memref type."""
    if not t.startswith("memref<"):
        raise EmulatorError(f"not a memref type: {t}")
    parts = split_top(t[len("memref<"):-1])[0].split("x")
    return [None if d == "?" else int(d) for d in parts[:-1]], parts[-1]


def to_bf16_bits(x):
    """Round-to-nearest-even f32 -> bf16 bit patterns (NaN kept NaN)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, np.float32))
    return np.where(nan, np.uint16(0x7FC0), r)


def from_bf16_bits(b):
    return (np.asarray(b).astype(np.uint32) << 16).view(np.float32)


class Buffer:
    """A memref: its elements (bf16 as bit patterns) and element type."""

    def __init__(self, array, elem):
        self.a, self.elem = array, elem


#===----------------------------------------------------------------------===#
# Execution
#===----------------------------------------------------------------------===#

CMPF = {0: lambda a, b: np.zeros_like(a, bool),
        1: lambda a, b: a == b, 2: lambda a, b: a > b, 3: lambda a, b: a >= b,
        4: lambda a, b: a < b, 5: lambda a, b: a <= b,
        6: lambda a, b: (a != b) & ~np.isnan(a) & ~np.isnan(b),
        7: lambda a, b: ~np.isnan(a) & ~np.isnan(b),
        8: lambda a, b: (a == b) | np.isnan(a) | np.isnan(b),
        9: lambda a, b: ~(a <= b), 10: lambda a, b: ~(a < b),
        11: lambda a, b: ~(a >= b), 12: lambda a, b: ~(a > b),
        13: lambda a, b: a != b,
        14: lambda a, b: np.isnan(a) | np.isnan(b),
        15: lambda a, b: np.ones_like(a, bool)}
CMPI = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult",
        7: "ule", 8: "ugt", 9: "uge"}


def unsigned(x):
    """`x` read as unsigned at its own width (i32 -1 is 2^32 - 1)."""
    x = np.asarray(x)
    if x.dtype.kind == "i":
        x = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    return x.astype(np.uint64)


class Lanes:
    """One warp's execution state: SSA values (an array per value, lanes
    first), the active-lane mask."""

    def __init__(self, n, env=None):
        self.n = n
        self.env = dict(env or {})
        self.mask = np.ones(n, bool)
        self.full = self.mask.copy()  # the lanes that exist


class KernelFormEmulator:
    def __init__(self, generic_text):
        top = Parser(generic_text).op()
        self.functions, self.kernels = {}, {}
        for op in top.regions[0].ops:
            if op.name == "func.func":
                self.functions[attr(op, "sym_name")] = op
            elif op.name == "gpu.module":
                for k in op.regions[0].ops:
                    if k.name == "gpu.func":
                        self.kernels[attr(k, "sym_name")] = k
        self.ops_run = 0

    # -- the host ----------------------------------------------------------

    def run(self, name, inputs, sizes=()):
        fn = self.functions[name]
        body = fn.regions[0]
        st = Lanes(1)
        args = list(inputs)
        outs = []
        k = 0
        # Outputs that alias (donated) inputs: pairs (output arg, input arg).
        m = re.search(r"tang.aliases = array<i64: ([\d, ]*)>", fn.attrs)
        pairs = [int(x) for x in m.group(1).split(",")] if m else []
        aliases = dict(zip(pairs[::2], pairs[1::2]))
        for pos, (a, t) in enumerate(zip(body.args, body.arg_types)):
            if t.startswith("memref"):
                dims, elem = memref_shape(t)
                if None in dims:
                    raise EmulatorError(f"argument of dynamic type {t}")
                if pos in aliases:
                    buf = st.env[body.args[aliases[pos]]]
                    outs.append(buf)
                elif k < len(args):
                    x = np.asarray(args[k], np.float64).reshape(dims)
                    k += 1
                    st.env[a] = Buffer(self.store_form(x, elem), elem)
                    continue
                else:
                    buf = Buffer(self.zeros(dims, elem), elem)
                    outs.append(buf)
                st.env[a] = buf
            else:
                st.env[a] = np.array([sizes[0]], np.int64)
                sizes = sizes[1:]
        self.exec_block(body, st)
        return [self.load_form(b) for b in outs]

    @staticmethod
    def store_form(x, elem):
        if elem == "bf16":
            return to_bf16_bits(x.astype(np.float32))
        return x.astype(SCALARS[elem])

    @staticmethod
    def load_form(b):
        if b.elem == "bf16":
            return from_bf16_bits(b.a)
        if b.elem.startswith("i"):
            return b.a.copy()
        return b.a.astype(np.float32)

    @staticmethod
    def zeros(dims, elem):
        """A fresh buffer: on a GPU its contents are undefined, so floats
        start NaN and integers at a sentinel (a kernel that reads what it
        never wrote shows)."""
        a = np.empty(dims, SCALARS[elem])
        if elem == "bf16":
            a.fill(0x7FC0)
        elif a.dtype.kind == "f":
            a.fill(np.nan)
        elif a.dtype.kind in "iu":
            a.fill(-0x5A5A5A5A % (1 << (8 * a.itemsize - 1)))
        else:
            a.fill(0)
        return a

    def launch(self, op, st):
        # Operand groups: async dependencies, grid x y z, block x y z,
        # cluster x y z, dynamic shared memory, kernel operands, async
        # object.
        seg = [int(x) for x in re.search(
            r"operandSegmentSizes = array<i32: ([^>]*)>", op.attrs).group(1)
            .split(",")]
        vals = [st.env[o] for o in op.operands]
        at = np.cumsum([0] + seg)
        grid = [int(vals[at[1] + i][0]) for i in range(3)]
        block = [int(vals[at[4] + i][0]) for i in range(3)]
        if seg[7] or seg[8] or seg[9]:
            raise EmulatorError("launch with clusters")
        dynamic = int(vals[at[10]][0]) if seg[10] else 0
        kernel_args = vals[at[11]:at[12]]
        kname = re.search(r"kernel = @\w+::@(\w+)", op.attrs).group(1)
        self.run_kernel(self.kernels[kname], grid, block, kernel_args,
                        dynamic)

    # -- kernels -------------------------------------------------------------

    def run_kernel(self, k, grid, block, args, dynamic=0):
        body = k.regions[0]
        # Threads in linear order (x fastest), in warps of LANES.
        threads = block[0] * block[1] * block[2]
        nparams = len(args)
        workgroup = [(a, t) for a, t in zip(body.args[nparams:],
                                            body.arg_types[nparams:])]
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    shared = {}
                    for a, t in workgroup:
                        dims, elem = memref_shape(t)
                        shared[a] = Buffer(self.zeros(dims, elem), elem)
                    # Undefined on a GPU: 0xff bytes are NaN in f32, f16
                    # and bf16.
                    smem = Buffer(np.full(dynamic, 0xFF, np.uint8), "i8")
                    warps = []
                    for w in range((threads + LANES - 1) // LANES):
                        st = Lanes(LANES)
                        # A last, partial warp's missing lanes never run.
                        st.mask = np.arange(LANES) + LANES * w < threads
                        st.full = st.mask.copy()
                        st.env.update(zip(body.args, args))
                        st.env.update(shared)
                        st.tid = np.arange(LANES, dtype=np.int64) + LANES * w
                        st.bid = (bx, by, bz)
                        st.bdim = block
                        st.gdim = grid
                        st.smem = smem
                        st.copies, st.groups = [], []
                        warps.append(st)
                    # Odd blocks run their warps last first: shared
                    # memory read before a missing barrier shows.
                    self.run_block(body, warps if (bx + by + bz) % 2 == 0
                                   else warps[::-1])

    def run_block(self, body, warps):
        """The block's warps side by side: each runs to its next barrier
        (a generator yields there), then the next warp; all must reach the
        same barriers."""
        running = [self.exec_ops(body.ops, st) for st in warps]
        while running:
            waiting, done = [], 0
            for g in running:
                try:
                    next(g)
                    waiting.append(g)
                except StopIteration:
                    done += 1
            if waiting and done:
                raise EmulatorError("a barrier that not every warp of the "
                                    "block reaches")
            running = waiting

    def exec_block(self, block, st):
        """Runs a region that must not wait at a barrier (the host)."""
        g = self.exec_ops(block.ops, st)
        try:
            next(g)
        except StopIteration as stop:
            return stop.value
        raise EmulatorError("gpu.barrier outside a kernel")

    def exec_ops(self, ops, st):
        """A generator running `ops`, yielding at each barrier; returns the
        operands of a terminator (scf.yield) or True on a return."""
        for op in ops:
            n = op.name
            if n == "scf.for":
                yield from self.exec_for(op, st)
            elif n == "scf.if":
                yield from self.exec_if(op, st)
            elif n == "gpu.barrier":
                if np.any(st.mask != st.full):
                    raise EmulatorError("gpu.barrier under divergent lanes")
                self.ops_run += 1
                yield "barrier"
            elif n == "scf.yield":
                return [st.env[o] for o in op.operands]
            elif n in ("gpu.return", "func.return"):
                return True
            else:
                self.exec_op(op, st)
        return None

    def exec_for(self, op, st):
        get = [st.env[o] for o in op.operands]
        lb, ub, step = get[:3]
        carried = list(get[3:])
        body = op.regions[0]
        if np.any((step <= 0) & st.mask):
            raise EmulatorError("scf.for with a step <= 0")
        # Lanes loop while their own induction variable is below their
        # bound (a divergent loop runs under a narrowing mask).
        saved = st.mask
        iv = lb.astype(np.int64)
        while True:
            live = saved & (iv < ub)
            if not live.any():
                break
            st.mask = live
            st.env[body.args[0]] = iv
            for a, v in zip(body.args[1:], carried):
                st.env[a] = v
            nxt = yield from self.exec_ops(body.ops, st)
            carried = [self.merge(live, x, y) for x, y in zip(nxt, carried)]
            iv = np.where(live, iv + step, iv)
        st.mask = saved
        self.set(st, op, carried)

    def exec_if(self, op, st):
        c = st.env[op.operands[0]]
        saved = st.mask
        results = []
        for region, take in zip(op.regions, (c, ~c)):
            if not region.ops:
                results.append(None)
                continue
            st.mask = saved & take
            if st.mask.any():
                results.append((yield from self.exec_ops(region.ops, st)))
            else:
                results.append(self.skip_results(op))
        st.mask = saved
        if op.results:
            then, else_ = results
            self.set(st, op, [self.merge(c, a, b)
                              for a, b in zip(then, else_)])

    def set(self, st, op, values):
        for name, v in zip(op.results, values):
            st.env[name] = v

    def exec_op(self, op, st):
        """One operation without regions."""
        self.ops_run += 1
        n = op.name
        env = st.env
        get = [env[o] for o in op.operands]
        ot = op.out_types[0] if op.out_types else None
        if n == "arith.constant":
            v = re.search(r"value = (.*?) : ([\w<>x]+)(?:[,}]|$)", op.attrs)
            if v is None:
                raw = re.search(r"value = (true|false)", op.attrs)
                if raw is None:
                    raise EmulatorError(f"constant {op.attrs}")
                self.set(st, op, [np.full(st.n, raw.group(1) == "true")])
                return None
            val, ty = v.group(1), v.group(2)
            elem, vec = element_of(ty)
            if val.startswith("dense<"):
                val = val[len("dense<"):-1]
            if elem in ("f32", "f16", "f64", "bf16"):
                x = self.float_constant(val, elem)
                arr = (to_bf16_bits(np.full(st.n, x, np.float32))
                       if elem == "bf16" else
                       np.full(st.n, x, SCALARS[elem]))
            else:
                arr = np.full(st.n, int(val), SCALARS[elem])
            if vec:
                arr = np.repeat(arr[:, None], vec, axis=1)
            self.set(st, op, [arr])
        elif n in ("arith.addi", "arith.subi", "arith.muli", "arith.andi",
                   "arith.ori", "arith.xori"):
            a, b = get
            f = {"arith.addi": np.add, "arith.subi": np.subtract,
                 "arith.muli": np.multiply, "arith.andi": np.bitwise_and,
                 "arith.ori": np.bitwise_or,
                 "arith.xori": np.bitwise_xor}[n]
            self.set(st, op, [f(a, b).astype(a.dtype)])
        elif n in ("arith.divui", "arith.remui", "arith.minui", "arith.maxui"):
            a, b = get
            ua, ub = unsigned(a), unsigned(b)
            act = st.mask
            if n in ("arith.divui", "arith.remui") and np.any(
                    (ub == 0) & act):
                raise EmulatorError(f"{n}: division by zero")
            nz = np.where(ub == 0, 1, ub)
            r = {"arith.divui": lambda: ua // nz,
                 "arith.remui": lambda: ua % nz,
                 "arith.minui": lambda: np.minimum(ua, ub),
                 "arith.maxui": lambda: np.maximum(ua, ub)}[n]()
            self.set(st, op, [r.astype(a.dtype)])
        elif n in ("arith.divsi", "arith.remsi", "arith.minsi", "arith.maxsi",
                   "arith.floordivsi", "arith.ceildivsi"):
            a, b = get
            if n != "arith.minsi" and n != "arith.maxsi" and np.any(
                    (b == 0) & st.mask):
                raise EmulatorError(f"{n}: division by zero")
            bb = np.where(b == 0, 1, b)
            r = {"arith.divsi": lambda: np.sign(a) * np.sign(bb) * (
                     np.abs(a) // np.abs(bb)),
                 "arith.remsi": lambda: np.fmod(a, bb),
                 "arith.floordivsi": lambda: np.floor_divide(a, bb),
                 "arith.ceildivsi": lambda: -np.floor_divide(-a, bb),
                 "arith.minsi": lambda: np.minimum(a, b),
                 "arith.maxsi": lambda: np.maximum(a, b)}[n]()
            self.set(st, op, [np.asarray(r).astype(a.dtype)])
        elif n in ("arith.sitofp", "arith.uitofp"):
            x = get[0] if n == "arith.sitofp" else unsigned(get[0])
            self.set(st, op, [x.astype(SCALARS[element_of(ot)[0]])])
        elif n in ("arith.fptosi", "arith.fptoui"):
            with np.errstate(all="ignore"):
                self.set(st, op, [get[0].astype(SCALARS[element_of(ot)[0]])])
        elif n in ("arith.extsi", "arith.extui", "arith.trunci"):
            x = get[0]
            if n == "arith.extui":
                x = unsigned(x)
            self.set(st, op, [x.astype(SCALARS[element_of(ot)[0]])])
        elif n == "arith.bitcast":
            self.set(st, op, [np.ascontiguousarray(get[0]).view(
                SCALARS[element_of(ot)[0]])])
        elif n == "arith.index_cast":
            self.set(st, op, [get[0].astype(SCALARS[ot])])
        elif n == "arith.cmpi":
            a, b = get
            p = CMPI[int(re.search(r"predicate = (\d+)", op.attrs)
                         .group(1))]
            if p[0] == "u":
                a, b = unsigned(a), unsigned(b)
                p = p[1:]
            elif p[0] == "s":
                p = p[1:]
            r = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b,
                 "gt": a > b, "ge": a >= b}[p]
            self.set(st, op, [r])
        elif n == "arith.cmpf":
            self.no_bf16_math(op)
            a, b = get
            p = int(re.search(r"predicate = (\d+)", op.attrs).group(1))
            with np.errstate(invalid="ignore"):
                self.set(st, op, [CMPF[p](a, b)])
        elif n == "arith.select":
            c, a, b = get
            if c.ndim < a.ndim:
                c = c.reshape(c.shape + (1,) * (a.ndim - c.ndim))
            self.set(st, op, [np.where(c, a, b)])
        elif n in ("arith.addf", "arith.subf", "arith.mulf", "arith.divf",
                   "arith.maximumf", "arith.minimumf"):
            self.no_bf16_math(op)
            a, b = get
            with np.errstate(all="ignore"):
                r = {"arith.addf": lambda: a + b,
                     "arith.subf": lambda: a - b,
                     "arith.mulf": lambda: a * b,
                     "arith.divf": lambda: a / b,
                     "arith.maximumf": lambda: np.maximum(a, b),
                     "arith.minimumf": lambda: np.minimum(a, b)}[n]()
            self.set(st, op, [r.astype(a.dtype)])
        elif n in ("arith.negf", "math.absf", "math.exp", "math.sqrt",
                   "math.rsqrt", "math.log", "math.tanh"):
            self.no_bf16_math(op)
            (a,) = get
            with np.errstate(all="ignore"):
                x = a.astype(np.float64)
                r = {"arith.negf": lambda: -x, "math.absf": lambda: np.abs(x),
                     "math.exp": lambda: np.exp(x),
                     "math.sqrt": lambda: np.sqrt(x),
                     "math.rsqrt": lambda: 1 / np.sqrt(x),
                     "math.log": lambda: np.log(x),
                     "math.tanh": lambda: np.tanh(x)}[n]()
            self.set(st, op, [r.astype(a.dtype)])
        elif n == "llvm.call_intrinsic":
            name = re.search(r'intrin = "([\w.]+)"', op.attrs).group(1)
            if name != "llvm.nvvm.ex2.approx.ftz.f32":
                raise EmulatorError(f"unsupported intrinsic {name}")
            with np.errstate(all="ignore"):
                r = np.exp2(get[0].astype(np.float64)).astype(np.float32)
            tiny = np.finfo(np.float32).tiny  # ftz: subnormals flush
            self.set(st, op, [np.where(np.abs(r) < tiny, np.float32(0), r)])
        elif n == "math.fma":
            self.no_bf16_math(op)
            a, b, c = get
            with np.errstate(all="ignore"):
                r = a.astype(np.float64) * b + c.astype(np.float64)
            self.set(st, op, [r.astype(a.dtype)])
        elif n == "arith.extf":
            src, _ = element_of(op.in_types[0])
            dst, _ = element_of(ot)
            x = get[0]
            x = from_bf16_bits(x) if src == "bf16" else x
            self.set(st, op, [x.astype(SCALARS[dst])])
        elif n == "arith.truncf":
            dst, _ = element_of(ot)
            x = get[0].astype(np.float32)
            self.set(st, op, [to_bf16_bits(x) if dst == "bf16"
                              else x.astype(SCALARS[dst])])
        elif n == "vector.bitcast":
            dst, cnt = element_of(ot)
            x = np.ascontiguousarray(get[0])
            self.set(st, op, [x.view(SCALARS[dst]).reshape(st.n, cnt)])
        elif n == "vector.extract":
            pos = [int(x) for x in re.search(
                r"static_position = array<i64: ([\d, ]+)>", op.attrs)
                .group(1).split(",")]
            self.set(st, op, [get[0][(slice(None), *pos)]])
        elif n == "vector.from_elements":
            self.set(st, op, [np.stack(get, axis=1)])
        elif n == "vector.broadcast":
            _, cnt = element_of(ot)
            self.set(st, op, [np.repeat(get[0][:, None], cnt, axis=1)])
        elif n == "llvm.extractvalue":
            i = int(re.search(r"position = array<i64: (\d+)>",
                              op.attrs).group(1))
            self.set(st, op, [get[0][i]])
        elif n == "memref.load":
            buf, idx = get[0], get[1:]
            self.set(st, op, [self.load(buf, idx, st, 1)])
        elif n == "vector.load":
            buf, idx = get[0], get[1:]
            _, cnt = element_of(ot)
            self.set(st, op, [self.load(buf, idx, st, cnt)])
        elif n == "vector.store":
            v, buf, idx = get[0], get[1], get[2:]
            self.store(buf, idx, v, st)
        elif n == "memref.store":
            v, buf, idx = get[0], get[1], get[2:]
            self.store(buf, idx, v, st)
        elif n == "memref.alloc":
            dims, elem = memref_shape(ot)
            dynamic = iter(get)
            dims = [int(next(dynamic)[0]) if d is None else d for d in dims]
            self.set(st, op, [Buffer(self.zeros(dims, elem), elem)])
        elif n == "memref.dealloc":
            pass
        elif n == "gpu.thread_id":
            d = "xyz".index(re.search(r"dim (\w)", op.attrs).group(1))
            # st.tid is the linear thread id, x fastest.
            below = int(np.prod(st.bdim[:d]))
            self.set(st, op, [(st.tid // below) % st.bdim[d]])
        elif n in ("gpu.block_id", "gpu.grid_dim", "gpu.block_dim"):
            d = "xyz".index(re.search(r"dim (\w)", op.attrs).group(1))
            src = {"gpu.block_id": st.bid, "gpu.grid_dim": st.gdim,
                   "gpu.block_dim": st.bdim}[n]
            self.set(st, op, [np.full(st.n, src[d], np.int64)])
        elif n == "gpu.shuffle":
            v, off, width = get
            if np.any(st.mask != st.full):
                raise EmulatorError("gpu.shuffle under divergent lanes")
            o, w = int(off[0]), int(width[0])
            if np.any(off != o) or np.any(width != w) or w != LANES:
                raise EmulatorError("gpu.shuffle: non-uniform offset/width")
            mode = op.attrs
            lane = np.arange(LANES)
            src = {"xor": lane ^ o, "down": lane + o, "up": lane - o,
                   "idx": np.full(LANES, o)}[
                re.search(r"shuffle_mode (\w+)", mode).group(1)]
            # Out of range, a lane gets its own value (valid false).
            ok = (src >= 0) & (src < LANES)
            self.set(st, op, [v[np.where(ok, src, lane)], ok])
        elif n == "nvvm.mma.sync":
            self.set(st, op, [self.mma(op, get, st)])
        elif n == "nvvm.prmt":
            self.set(st, op, [self.prmt(op, get)])
        elif n == "gpu.launch_func":
            self.launch(op, st)
        elif n in ("nvgpu.device_async_copy", "nvgpu.device_async_create_group",
                   "nvgpu.device_async_wait"):
            self.async_copy(op, get, st)
        elif n == "nvgpu.ldmatrix":
            self.set(st, op, [self.ldmatrix(op, get, st)])
        elif n == "gpu.dynamic_shared_memory":
            self.set(st, op, [st.smem])
        elif n in ("memref.collapse_shape", "memref.expand_shape"):
            # A row-major reshape: a view of the same elements.
            src = get[0]
            dims, elem = memref_shape(ot)
            known = int(np.prod([d for d in dims if d is not None]))
            dims = [src.a.size // known if d is None else d for d in dims]
            if int(np.prod(dims)) != src.a.size or not \
                    src.a.flags["C_CONTIGUOUS"]:
                raise EmulatorError(f"{n} of {src.a.shape} to {dims}")
            self.set(st, op, [Buffer(src.a.reshape(dims), elem)])
        elif n == "memref.view":
            src, offset = get[0], get[1]
            dims, elem = memref_shape(ot)
            if None in dims:
                raise EmulatorError("memref.view of a dynamic shape")
            off = int(offset[st.mask][0]) if st.mask.any() else 0
            dt = np.dtype(SCALARS[elem])
            size = int(np.prod(dims)) * dt.itemsize
            if off < 0 or off + size > src.a.nbytes:
                raise EmulatorError(f"memref.view of {size} bytes at {off} "
                                    f"outside {src.a.nbytes}")
            view = src.a[off:off + size].view(dt).reshape(dims)
            self.set(st, op, [Buffer(view, elem)])
        else:
            raise EmulatorError(f"unsupported operation {n}")

    @staticmethod
    def no_bf16_math(op):
        """bf16 values are bit patterns here: arithmetic on them would be
        silently wrong (the kernels compute in f32)."""
        if any(element_of(t)[0] == "bf16" for t in op.in_types):
            raise EmulatorError(f"{op.name} on bf16 values")

    @staticmethod
    def merge(c, a, b):
        """Per lane, `a` where `c` holds, else `b` (structs elementwise)."""
        if isinstance(a, tuple):
            return tuple(KernelFormEmulator.merge(c, x, y)
                         for x, y in zip(a, b))
        cc = c.reshape(c.shape + (1,) * (np.ndim(a) - 1))
        return np.where(cc, a, b)

    def skip_results(self, op):
        """Placeholder results of a region no lane takes."""
        out = []
        for t in op.out_types:
            elem, vec = element_of(t)
            shape = (LANES,) if vec is None else (LANES, vec)
            out.append(np.zeros(shape, SCALARS[elem]))
        return out

    @staticmethod
    def float_constant(val, elem):
        if val.startswith("0x"):
            bits = int(val, 16)
            if elem == "f32":
                return np.array([bits], np.uint32).view(np.float32)[0]
            if elem == "f16":
                return np.array([bits], np.uint16).view(np.float16)[0]
            if elem == "bf16":
                return from_bf16_bits(np.array([bits], np.uint16))[0]
            return np.array([bits], np.uint64).view(np.float64)[0]
        return float(val)

    def check(self, buf, idx, st, cnt):
        dims = buf.a.shape
        act = st.mask
        for d, (i, ext) in enumerate(zip(idx, dims)):
            last = ext - cnt if d == len(dims) - 1 else ext - 1
            bad = act & ((i < 0) | (i > last))
            if np.any(bad):
                lane = int(np.argmax(bad))
                raise EmulatorError(
                    f"out-of-bounds access: lane {lane}, coordinates "
                    f"{[int(j[lane]) for j in idx]} of {list(dims)}")

    def load(self, buf, idx, st, cnt):
        self.check(buf, idx, st, cnt)
        act = st.mask
        safe = [np.where(act, i, 0) for i in idx]
        if cnt == 1:
            v = buf.a[tuple(safe)]
        else:
            v = np.stack([buf.a[tuple(safe[:-1]) + (safe[-1] + e,)]
                          for e in range(cnt)], axis=1)
        return v

    def store(self, buf, idx, v, st):
        """A scalar (or, for a vector value, contiguous) store per active
        lane."""
        cnt = 1 if v.ndim == 1 else v.shape[1]
        self.check(buf, idx, st, cnt)
        act = st.mask
        if v.dtype != buf.a.dtype:
            raise EmulatorError(f"store of {v.dtype} into {buf.a.dtype}")
        for e in range(cnt):
            sel = tuple(i[act] for i in idx[:-1]) + (idx[-1][act] + e,)
            buf.a[sel] = (v if cnt == 1 else v[:, e])[act]

    def mma(self, op, get, st):
        if not st.mask.all():
            raise EmulatorError("nvvm.mma.sync under divergent lanes or in "
                                "a partial warp")
        if "m = 16, n = 8, k = 16" not in op.attrs:
            raise EmulatorError("nvvm.mma.sync: only m16n8k16")
        ptx = re.search(r"multiplicandAPtxType = #nvvm.mma_type<(\w+)>",
                        op.attrs).group(1)
        a, b, c = get[0:4], get[4:6], get[6:10]

        def halves(reg):
            """Two 16-bit operands of a register, as f64 (low first)."""
            r = np.asarray(reg)
            if r.ndim == 2:  # vector<2xf16>
                bits = np.ascontiguousarray(r).view(np.uint16).reshape(
                    LANES, 2)
            else:
                bits = np.ascontiguousarray(r.astype(np.int32)).view(
                    np.uint16).reshape(LANES, 2)
            if ptx == "bf16":
                return from_bf16_bits(bits).astype(np.float64)
            return bits.view(np.float16).astype(np.float64)
        lane = np.arange(LANES)
        g, t = lane // 4, lane % 4
        A = np.zeros((16, 16))
        B = np.zeros((16, 8))
        C = np.zeros((16, 8))
        for reg, (r0, c0) in zip(a, ((0, 0), (8, 0), (0, 8), (8, 8))):
            h = halves(reg)
            A[g + r0, 2 * t + c0] = h[:, 0]
            A[g + r0, 2 * t + c0 + 1] = h[:, 1]
        for reg, k0 in zip(b, (0, 8)):
            h = halves(reg)
            B[2 * t + k0, g] = h[:, 0]
            B[2 * t + k0 + 1, g] = h[:, 1]
        for reg, (r0, c0) in zip(c, ((0, 0), (0, 1), (8, 0), (8, 1))):
            C[g + r0, 2 * t + c0] = reg
        with np.errstate(all="ignore"):
            D = (A @ B + C).astype(np.float32)
        return tuple(D[g + r0, 2 * t + c0]
                     for r0, c0 in ((0, 0), (0, 1), (8, 0), (8, 1)))

    def async_copy(self, op, get, st):
        """cp.async: a copy is pending until its group is waited for (its
        destination keeps the old bytes until then, as on a GPU)."""
        n = op.name
        if n == "nvgpu.device_async_copy":
            seg = [int(x) for x in re.search(
                r"operandSegmentSizes = array<i32: ([^>]*)>", op.attrs)
                .group(1).split(",")]
            at = np.cumsum([0] + seg)
            dst, didx = get[0], get[at[1]:at[2]]
            src, sidx = get[at[2]], get[at[3]:at[4]]
            cnt = int(re.search(r"dstElements = (\d+)", op.attrs).group(1))
            valid = get[at[4]] if seg[4] else np.full(st.n, cnt)
            act = st.mask
            self.check(dst, didx, st, cnt)
            # The source's elements past `valid` are not read (zeros).
            full = act & (valid >= cnt)
            part = Lanes(st.n)
            part.mask = full
            data = np.zeros((st.n, cnt), dst.a.dtype)
            if full.any():
                data[full] = self.load(src, sidx, part, cnt)[full]
            for lane in np.flatnonzero(act & ~full):
                k = int(valid[lane])
                one = Lanes(st.n)
                one.mask = np.arange(st.n) == lane
                for e in range(k):
                    ix = [i.copy() for i in sidx]
                    ix[-1] = ix[-1] + e
                    data[lane, e] = self.load(src, ix, one, 1)[lane]
            st.copies.append((dst, [i.copy() for i in didx], data, act.copy()))
            self.set(st, op, [object()])
        elif n == "nvgpu.device_async_create_group":
            st.groups.append(st.copies)
            st.copies = []
            self.set(st, op, [object()])
        else:
            m = re.search(r"numGroups = (\d+)", op.attrs)
            keep = int(m.group(1)) if m else 0
            while len(st.groups) > keep:
                for dst, didx, data, act in st.groups.pop(0):
                    for e in range(data.shape[1]):
                        sel = tuple(i[act] for i in didx[:-1]) + (
                            didx[-1][act] + e,)
                        dst.a[sel] = data[act, e]

    def ldmatrix(self, op, get, st):
        """ldmatrix.x{1,2,4}[.trans]: lane 8m + r gives row r of 8x8
        matrix m (8 16-bit elements at its address); lane t receives, of
        each matrix, row t/4's columns 2(t%4), 2(t%4)+1 (transposed: those
        rows of column t/4)."""
        if not st.mask.all():
            raise EmulatorError("nvgpu.ldmatrix under divergent lanes")
        tiles = int(re.search(r"numTiles = (\d+)", op.attrs).group(1))
        trans = "transpose = true" in op.attrs
        rows = self.load(get[0], get[1:], st, 8)  # [32, 8]
        lane = np.arange(LANES)
        g, t = lane // 4, lane % 4
        out = np.zeros((LANES, tiles, 2), rows.dtype)
        for m in range(tiles):
            mat = rows[8 * m:8 * m + 8]  # [r, c]
            if trans:
                mat = mat.T
            out[:, m, 0] = mat[g, 2 * t]
            out[:, m, 1] = mat[g, 2 * t + 1]
        return out

    @staticmethod
    def prmt(op, get):
        if "default" not in op.attrs:
            raise EmulatorError("nvvm.prmt: only the default mode")
        lo, hi, sel = get  # the generic form's (ODS) order
        pool = np.stack([np.ascontiguousarray(lo.astype(np.int32)).view(
            np.uint8).reshape(-1, 4), np.ascontiguousarray(
            hi.astype(np.int32)).view(np.uint8).reshape(-1, 4)], axis=1
        ).reshape(-1, 8)
        out = np.zeros((lo.shape[0], 4), np.uint8)
        for byte in range(4):
            nib = (sel.astype(np.int64) >> (4 * byte)) & 0xF
            if np.any(nib & 8):
                raise EmulatorError("nvvm.prmt: sign-replicating selectors")
            out[:, byte] = pool[np.arange(lo.shape[0]), nib]
        return out.view(np.int32).reshape(-1)
