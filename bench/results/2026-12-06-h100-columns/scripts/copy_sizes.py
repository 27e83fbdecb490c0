"""What a read of a GEMV-sized tensor reaches: torch's copy and sum at
33.6 MB (GEMV 4096x4096 bf16), 100 MB and 2 GiB, rotating 4 buffers (past
L2), median of 50 CUDA-event-timed calls."""
import statistics, torch
def t(fn, reps=50):
    for _ in range(3): fn()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    return statistics.median(ts)
for nbytes in (33554432, 100663296, 2147483648):
    n = nbytes // 2
    bufs = [torch.randn(n, device="cuda").bfloat16() for _ in range(4 if nbytes < 1e9 else 1)]
    dst = torch.empty_like(bufs[0])
    i = [0]
    def nxt():
        i[0] = (i[0] + 1) % len(bufs); return bufs[i[0]]
    cp = t(lambda: dst.copy_(nxt()))
    sm = t(lambda: nxt().view(4096, -1).sum(dim=1, dtype=torch.float32))
    print(f"{nbytes/1e6:8.1f} MB: copy {cp*1e3:7.1f} us = {2*nbytes/cp/1e9:5.2f} TB/s (r+w); "
          f"row sums {sm*1e3:7.1f} us = {nbytes/sm/1e9:5.2f} TB/s (read)", flush=True)
    del bufs, dst
    torch.cuda.empty_cache()
