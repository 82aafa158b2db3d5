"""How long a value takes to go from one thread block to another on this GPU, and from the
GPU to the host and back: the latencies under the structured update's chain.

    python3 benchmarks/handoff_latency.py [--out FILE.md]

Three ping-pongs, each 20000 hand-offs (the host's 2000) timed by the GPU's globaltimer;
the median of 5 runs, one way (half a round trip; the host's, the whole round trip):

* two blocks on two SMs (one a SM: each asks for 200 KB of shared memory), one int in
  global memory that each waits for by loads and then sets by a store: with acquire
  loads and release stores (``ld.acquire.gpu``, ``st.release.gpu``: what ``flag_acquire``
  and ``flag_release`` do) and with relaxed ones (``ld.relaxed.gpu``,
  ``st.relaxed.gpu``: what the tagged words of ``st_ll_put`` and ``st_ll_wait`` do);
* two blocks of one thread-block cluster, each storing into the other's shared memory
  (distributed shared memory) and waiting on its own;
* one GPU thread and the host (Python, a NumPy view of pinned memory): the GPU stores a
  count and waits for the host to store it back, as ``gpu._structured_outcome`` waits
  for the report.
"""
import argparse
import statistics
from pathlib import Path

import cupy as cp
import numpy as np

SOURCE = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ __forceinline__ unsigned long long now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ int load(const int* p, bool relaxed)
{
    int v;
    if (relaxed) asm volatile("ld.relaxed.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    else asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store(int* p, int v, bool relaxed)
{
    if (relaxed) asm volatile("st.relaxed.gpu.global.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
    else asm volatile("st.release.gpu.global.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
// block b waits for 2 i + b and stores 2 i + b + 1
extern "C" __global__ void global_pingpong(int* flag, int iters, int relaxed,
                                           unsigned long long* out, unsigned* sm)
{
    if (threadIdx.x) return;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm[blockIdx.x]));
    const unsigned long long t0 = now();
    for (int i = 0; i < iters; ++i) {
        while (load(flag, relaxed) != 2 * i + (int)blockIdx.x) {}
        store(flag, 2 * i + blockIdx.x + 1, relaxed);
    }
    if (blockIdx.x == 0) out[0] = now() - t0;
}
// block 1 waits for 2 i in its shared memory, block 0 for 2 i + 1 in its own
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_pingpong(int iters,
                                                                    unsigned long long* out)
{
    __shared__ volatile int box;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) box = -1;
    cluster.sync();
    const int me = cluster.block_rank();
    if (threadIdx.x == 0) {
        volatile int* other = cluster.map_shared_rank(const_cast<int*>(&box), 1 - me);
        const unsigned long long t0 = now();
        if (me == 0) *other = 0;
        for (int i = 0; i < iters; ++i) {
            const int want = 2 * i + 1 - me;
            while (box != want) {}
            *other = want + 1;
        }
        if (me == 0) out[0] = now() - t0;
    }
    cluster.sync();
}
extern "C" __global__ void host_pingpong(volatile int* host, int iters, unsigned long long* out)
{
    if (threadIdx.x) return;
    const unsigned long long t0 = now();
    for (int i = 1; i <= iters; ++i) {
        host[0] = i;
        __threadfence_system();
        while (host[1] != i) {}
    }
    out[0] = now() - t0;
}
'''


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="also write the lines to this markdown file")
    args = p.parse_args(argv)
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",), backend="nvcc")
    global_pp, cluster_pp, host_pp = (mod.get_function(f) for f in (
        "global_pingpong", "cluster_pingpong", "host_pingpong"))
    out, sm = cp.zeros(1, cp.uint64), cp.zeros(2, cp.uint32)
    n, smem = 20000, 200 * 1024
    global_pp.max_dynamic_shared_size_bytes = smem
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    lines = [f"Hand-off latencies, ns (median of 5 runs; {name})", ""]
    for relaxed, how in ((0, "acquire loads, release stores"), (1, "relaxed loads and stores")):
        runs = []
        for _ in range(5):
            flag = cp.zeros(1, cp.int32)
            global_pp((2,), (32,), (flag, np.int32(n), np.int32(relaxed), out, sm),
                      shared_mem=smem)
            runs.append(int(out[0]) / (2 * n))
        lines.append(f"- SM to SM through global memory, {how}: {statistics.median(runs):.0f}"
                     f" one way (SMs {sm.get().tolist()})")
    runs = []
    for _ in range(5):
        cluster_pp((2,), (32,), (np.int32(n), out))
        runs.append(int(out[0]) / (2 * n))
    lines.append(f"- within a cluster of 2, through distributed shared memory: "
                 f"{statistics.median(runs):.0f} one way")
    pinned = cp.cuda.alloc_pinned_memory(64)
    words = np.frombuffer(pinned, np.int32, 16)
    device = cp.cuda.runtime.pointerGetAttributes(pinned.ptr).devicePointer
    runs, m = [], 2000
    for _ in range(5):
        words[:] = 0
        host_pp((1,), (32,), (np.uint64(device), np.int32(m), out))
        for i in range(1, m + 1):
            while words[0] != i:
                pass
            words[1] = i
        cp.cuda.Device().synchronize()
        runs.append(int(out[0]) / m)
    lines.append(f"- GPU to host (a Python loop reading a NumPy view of pinned memory) and "
                 f"back: {statistics.median(runs):.0f} the round trip")
    print("\n".join(lines), flush=True)
    if args.out:
        args.out.write_text("Command: `python3 benchmarks/handoff_latency.py --out ...`\n\n"
                            + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
