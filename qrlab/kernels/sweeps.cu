// Givens sweeps for qrlab (float and double): the rotations, group of waves by group of
// waves, applied straight to the rows of Q and the columns of R.
//
// The papers launch two kernels per wave of rotations (makeGivens, applyGivens), so an
// update costs O(m) launches.  Here one launch (strips.cu; one per 256 sweeps) computes
// every rotation, and one more (below) applies them all to Q and R.
//
// Sweep s zeroes driver line s bottom-up; at wave t it rotates rows (i-1, i) with
// i = B - t + 2 s, when tops[s] < i < bottoms[s].  C, S: nwaves x p, as strips.cu leaves
// them (the slots of rotations that run; the others are never read here).  A row of Q
// (over its columns) and a column of R (over its rows) take the same rotations: each is
// a "vector" here, and its entries are the rows the sweeps name.
//
// Sweep order.  Within a group of waves, the rotations may be applied sweep by sweep
// instead of wave by wave: a rotation of sweep s + 1 at wave t' and one of sweep s at a
// later wave t > t' touch rows at least 3 apart, so they commute.  Sweep s over waves
// t0 .. t1 - 1 is a chain climbing the rows one a wave: a thread that owns a vector
// holds the rows of K consecutive sweeps (2K rows) in registers, and per wave reads one
// new row from shared memory, applies K rotations, and writes back the row that leaves
// (Van Zee, van de Geijn and Quintana-Orti's wavefront).  Per rotation: four
// multiplications, a quarter of a (c, s) load, and 2 / K shared memory accesses.
//
// Warps.  A thread block owns 32 vectors of the group's rows (a tile in shared memory,
// one lane a vector); the sweeps go in chunks of K, chunk c to warp c mod nwarp.  Chunk c
// reads at wave t the row that chunk c - 1 leaves at wave t - 1, so it waits until chunk
// c - 1 has counted those waves done (in shared memory, every STEP waves): the chunks
// run a few waves apart, chunk c starting about STEP c waves after the first.  (A block
// barrier every APPLY_WAVES waves instead, the warps one phase apart, made that 2 p.)
// STEP is 8 in double: fewer counts and waits outweigh the longer fill.  Against 4 the
// update took 0.92 to 1.03 of the time (median 0.965) at the 48 cells of 000 Tables 2, 3,
// 10 and 11 (H200, benchmarks/ab_apply.py), removing 80 or 100 rows 0.945 to 0.967; 16
// took 1.016 of 8's time, 2 and 1 1.07 and 1.24 of 4's, a nanosleep in the wait 0.995.
// Float kept 4: 8 took 0.95 to 1.04 of its time (median 0.99) at Tables 2, 10 and 11
// (benchmarks/results/apply-step-*.md).
// In double a warp takes its next chunk as soon as it is done with one:
// with a block barrier after each round of nwarp chunks, as float keeps, every round fills
// and drains the warps once more (H100, removing 80 or 100 rows and adding 200 columns at
// k < n: the whole update 0.81 to 0.96 of its time with the rounds).  Float gained nothing
// so (adding 200 columns: two rounds at K = 8), and its kernels' code came out slower
// (removing 100 rows: one round, 1.02 to 1.06): benchmarks/results/ab-apply-*.md.
// The (c, s) of a warp's next APPLY_WAVES waves are staged in its own shared memory (the
// identity where a sweep does not rotate), fetched while the waves before run.
//
// Work items.  An item is one group and one tile (of 32 rows of Q or 32 columns of R),
// taken in order from a ticket counter by persistent blocks.  An item waits for its
// group's waves (the last strip's progress counter; none when the rotations are all done
// before the launch) and for its tile's previous group (done[tile]), so a tile moves on
// to the next group as soon as it can, while other tiles are still in the one before.
// Every item's dependencies hold tickets taken earlier, by running blocks: no deadlock
// whatever the number of blocks resident.
//
// Measured (H100, Nsight Compute, float32, K = 8, removing 100 rows of 12000 x 6000, the
// rotations all done before the launch): 4.7 ms, 70% of the issue slots busy, 44% of the
// instructions floating point, and K = 8's spills (16 bytes) 4.5 M local requests.  Beside
// the rotation kernel it follows that kernel (5.8 ms) and ends about 0.3 ms after it.

#define APPLY_WAVES 16   // waves per stage of (c, s): a multiple of 2 K, so that the
                         // register window is back in place at every stage
#define APPLY_ROUND (1 << 16)   // a warp's count of waves done, per round (> waves + D)
#define APPLY_LD 33      // the tile's row pitch: a row of Q read along its columns, one
                         // lane a value, lands in 32 different banks

template <typename T, int K>
__device__ void apply_sweeps(T* Q, long long q_vec, long long q_elem, int nq,
                             T* R, long long r_vec, long long r_elem, int a0, int a1,
                             int dense_from, const T* C, const T* S, int p, const int* tops,
                             const int* bottoms, int B, int nwaves, int nbw, const int* lo,
                             const int* hi, int ngroups, int tile_rows, const int* progress,
                             int* ticket, int* done)
{
    constexpr int W2 = 2 * K, D = APPLY_WAVES, NQ = (D * K + 31) / 32;
    constexpr int STEP = sizeof(T) == 8 ? 8 : 4;   // waves between a warp's counts of waves
                                                    // done (and its waits): see the header
    static_assert(D % STEP == 0, "a phase must end on a count");
    static_assert(D % W2 == 0, "a phase must bring the window back in place");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* X = reinterpret_cast<T*>(smem_raw);                         // tile_rows x APPLY_LD
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarp = blockDim.x >> 5;
    T* cs = X + ((size_t)tile_rows * APPLY_LD + 3) / 4 * 4 + (size_t)warp * D * K * 2;
    __shared__ int item_s, done_s[32], round_s[32];   // the item; each warp's waves done,
                                                       // and where its chunk's count starts
    const int nq_tiles = (nq + 31) / 32, nr_tiles = a1 > a0 ? (a1 - a0 + 31) / 32 : 0;
    const int ntiles = nq_tiles + nr_tiles;
    for (;;) {
        __syncthreads();                                 // the last item's tile is out
        if (threadIdx.x == 0) item_s = atomicAdd(ticket, 1);
        __syncthreads();
        const int item = item_s;
        if (item >= ngroups * ntiles) return;
        const int g = item / ntiles, tile = item - g * ntiles;
        const int glo = lo[g], ghi = hi[g], t0 = g * nbw, t1 = min(nwaves, t0 + nbw);
        const bool on_q = tile < nq_tiles;
        T* base = on_q ? Q : R;
        const long long vs = on_q ? q_vec : r_vec, es = on_q ? q_elem : r_elem;
        // the tile's vectors v0 .. v0 + 31, of which vlo .. vhi - 1 exist (rows of R
        // below lo are zero left of column lo - p, unless carried columns come first)
        const int v0 = on_q ? tile * 32 : a0 + (tile - nq_tiles) * 32;
        const int vlo = on_q ? 0 : max(a0, min(glo - p, dense_from)), vhi = on_q ? nq : a1;
        const int h = ghi - glo;
        const bool work = h > 0 && v0 + 32 > vlo && v0 < vhi;
        if (threadIdx.x == 0) {
            if (work && progress != nullptr)             // the group's waves are out
                flag_wait(progress, t1, 256);
            flag_wait(done + tile, g, 128);
        }
        __syncthreads();
        if (work) {
            // f(e, u, ok, at) for entry e of the tile's vector u (ok: it exists; at: its
            // place in device memory), lanes along whichever index is contiguous there
            auto each = [&](auto f) {
                if (vs == 1) {
                    for (int e = warp; e < h; e += nwarp)
                        f(e, lane, v0 + lane >= vlo && v0 + lane < vhi,
                          (glo + e) * es + v0 + lane);
                } else {
                    for (int u = warp; u < 32; u += nwarp)
                        for (int e = lane; e < h; e += 32)
                            f(e, u, v0 + u >= vlo && v0 + u < vhi,
                              (long long)(v0 + u) * vs + (glo + e) * es);
                }
            };
            each([&](int e, int u, bool ok, long long at) {         // the tile in
                X[e * APPLY_LD + u] = ok ? __ldcg(base + at) : T(0);
            });
            __syncthreads();
            // a row of the tile; rows outside the group's are only ever rotated by the
            // identity, so they read as zero and are not written
            auto load = [&](int r) {
                return r >= glo && r < ghi ? X[(r - glo) * APPLY_LD + lane] : T(0);
            };
            auto store = [&](int r, T v) {
                if (r >= glo && r < ghi) X[(r - glo) * APPLY_LD + lane] = v;
            };
            const int nph = (t1 - t0 + D - 1) / D;
            // Chunk c (sweeps K c .. K c + K - 1) goes to warp c mod nwarp and waits on
            // chunk c - 1.  In double a warp takes its next chunk as soon as it is done
            // with one (in_turn: a warp's count of waves done is APPLY_ROUND times its
            // round plus its waves done in that round, read from round_s); in float the
            // chunks go in rounds of nwarp, a block barrier after each (see the header).
            constexpr bool in_turn = sizeof(T) == 8;
            if (in_turn) {
                if (lane == 0) done_s[warp] = 0;
                __syncthreads();
            }
            for (int sc = 0; sc < p; sc += K * nwarp) {           // a round of chunks
                const int chunk = sc / K + warp;
                if (!in_turn) {
                    if (lane == 0) done_s[warp] = t0;
                    __syncthreads();
                }
                if (chunk * K < p) {
                    const int s0 = chunk * K, my_s = s0 + lane % K;
                    if (in_turn) {
                        if (lane == 0) round_s[warp] = sc / (K * nwarp) * APPLY_ROUND - t0;
                        __syncwarp();
                    }
                    const int my_top = my_s < p ? tops[my_s] : 0x7fffffff;
                    const int my_bottom = my_s < p ? bottoms[my_s] : 0;
                    T pc[NQ], ps[NQ], x[W2];
                    auto fetch = [&](int jp) {                    // (c, s) of waves jp D ..
#pragma unroll
                        for (int q = 0; q < NQ; ++q) {
                            const int e = lane + 32 * q, t = t0 + jp * D + e / K;
                            const int i = B - t + 2 * my_s;
                            const bool on = e < D * K && t < t1 && i > my_top && i < my_bottom;
                            pc[q] = on ? __ldcg(C + (size_t)t * p + my_s) : T(1);
                            ps[q] = on ? __ldcg(S + (size_t)t * p + my_s) : T(0);
                        }
                    };
                    fetch(0);
                    for (int jp = 0; jp < nph; ++jp) {
#pragma unroll
                        for (int q = 0; q < NQ; ++q) {
                            const int e = lane + 32 * q;
                            if (e < D * K) {
                                cs[2 * e] = pc[q];
                                cs[2 * e + 1] = ps[q];
                            }
                        }
                        __syncwarp();
                        if (jp + 1 < nph) fetch(jp + 1);
                        // x[(m - u) mod 2K] holds row top0 - u + m at wave u of these D
                        const int tb = t0 + jp * D, top0 = B - tb + 2 * s0 - 1;
                        if (jp == 0)               // rows no other warp touches before
#pragma unroll
                            for (int m = 1; m < W2; ++m) x[m] = load(top0 + m);
#pragma unroll
                        for (int u = 0; u < D; ++u) {
                            if (u % STEP == 0 && (in_turn ? chunk : warp) > 0) {
                                // waves tb + u .. + STEP - 1 read the rows that the
                                // sweeps before leave one wave earlier (chunk c - 1: the
                                // warp before, or the last warp in the round before; its
                                // count's base read from shared memory each time: held
                                // in a register, it made more spills)
                                const int before = warp > 0 ? warp - 1 : nwarp - 1;
                                const int need = (in_turn ? *(volatile int*)(round_s + warp)
                                                            - (warp > 0 ? 0 : APPLY_ROUND)
                                                          : 0)
                                                 + tb + u + STEP;
                                while (*(volatile int*)(done_s + before) < need) {}
                                __threadfence_block();
                            }
                            x[(W2 - u % W2) % W2] = load(top0 - u);
#pragma unroll
                            for (int j = 0; j < K; j += 2) {
                                T w[4];
                                if constexpr (K == 1) {
                                    lds2(cs + 2 * u, w);
                                } else {
                                    lds4(cs + 2 * (u * K + j), w);
                                }
#pragma unroll
                                for (int jj = 0; jj < 2 && j + jj < K; ++jj) {
                                    const int ia = (2 * (j + jj) - u % W2 + W2) % W2;
                                    const int ib = (ia + 1) % W2;
                                    const T c = w[2 * jj], s = w[2 * jj + 1];
                                    const T a = x[ia], b = x[ib];
                                    x[ia] = c * a + s * b;
                                    x[ib] = c * b - s * a;
                                }
                            }
                            store(top0 - u + W2 - 1, x[(W2 - 1 - u % W2 + W2) % W2]);
                            if (u % STEP == STEP - 1) {
                                __syncwarp();              // every lane's rows, then the count
                                if (lane == 0) {
                                    __threadfence_block();
                                    *(volatile int*)(done_s + warp) =
                                        (in_turn ? *(volatile int*)(round_s + warp) : 0)
                                        + tb + u + 1;
                                }
                            }
                        }
                        __syncwarp();                             // cs read out
                        if (jp == nph - 1)
#pragma unroll
                            for (int m = 1; m < W2; ++m) store(top0 - D + m, x[m]);
                    }
                }
                if (!in_turn) __syncthreads();                    // the round done
            }
            if (in_turn) __syncthreads();                         // every chunk done
            each([&](int e, int u, bool ok, long long at) {         // and back
                if (ok) base[at] = X[e * APPLY_LD + u];
            });
        }
        __syncthreads();                                          // the tile, then the count
        if (threadIdx.x == 0) flag_release(done + tile, g + 1);
    }
}

// apply_sweeps_{f32,f64}_k{1,2,4,8}: K sweeps per warp
#define APPLY_KERNEL(T, NAME, K)                                                          \
    extern "C" __global__ void __launch_bounds__(512, 2)                                  \
    NAME(T* Q, long long q_vec, long long q_elem, int nq, T* R, long long r_vec,          \
         long long r_elem, int a0, int a1, int dense_from, const T* C, const T* S, int p, \
         const int* tops, const int* bottoms, int B, int nwaves, int nbw, const int* lo,  \
         const int* hi, int ngroups, int tile_rows, const int* progress, int* ticket,     \
         int* done)                                                                       \
    { apply_sweeps<T, K>(Q, q_vec, q_elem, nq, R, r_vec, r_elem, a0, a1, dense_from, C, S, \
                         p, tops, bottoms, B, nwaves, nbw, lo, hi, ngroups, tile_rows,    \
                         progress, ticket, done); }
APPLY_KERNEL(float, apply_sweeps_f32_k1, 1)
APPLY_KERNEL(float, apply_sweeps_f32_k2, 2)
APPLY_KERNEL(float, apply_sweeps_f32_k4, 4)
APPLY_KERNEL(float, apply_sweeps_f32_k8, 8)
APPLY_KERNEL(double, apply_sweeps_f64_k1, 1)
APPLY_KERNEL(double, apply_sweeps_f64_k2, 2)
APPLY_KERNEL(double, apply_sweeps_f64_k4, 4)   // (float64 takes K <= 4: gpu.py)

// Wait until *progress >= need (the rotation kernel, running on another stream, counts
// its finished waves there), so that the kernels queued after this one may read them.
extern "C" __global__ void wait_for_waves(const int* progress, int need)
{
    if (threadIdx.x == 0) flag_wait(progress, need, 256);
}
