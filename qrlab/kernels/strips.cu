// Every rotation of a block of pipelined Givens sweeps, computed by a chain of thread
// blocks, the rows passed from sweep to sweep in registers (float and double).
//
// D is the driver block, N rows by p columns, row-major.  Sweep s zeroes column s
// bottom-up; at wave t it rotates rows (i - 1, i), i = B - t + 2 s, while
// tops[s] < i < bottoms[s].  A rotation [[c, s], [-s, c]] makes c*a + s*b = r and
// -s*a + c*b = 0.
//
// Strips.  Column j is rotated only by sweeps s <= j (left of a sweep its rows are zero),
// and sweep s reads only column s.  So the work splits into strips of 32 columns that
// depend on each other one way: block b owns columns c0 = s_lo + 32 b .. c0 + 31, computes
// the sweeps of those columns, and applies to them the sweeps of the columns left of it,
// which the blocks before it computed.  Those come through C and S in device memory:
// each block publishes how many waves it has finished (progress, every STRIP_CHUNK
// waves), and the next one, running that far behind, copies them into shared memory.
// So all blocks work at once, one lane per column.
//
// A systolic pipeline inside a strip.  At wave t sweep s keeps row i - 1 (it rotates it
// again at wave t + 1, as its lower row) and hands row i down to sweep s + 1, which
// rotates it at wave t + 1 as its upper row.  So sweep s holds one row (its carry), gets
// one row per wave from sweep s - 1 (its inbox) and passes one on: each row of D enters
// at the first sweep and leaves after the last, and in between it lives in registers.
// A warp owns Q consecutive sweeps, passes rows between them in registers and to
// the next warp through shared memory; an earlier strip's rotation is a broadcast load
// of (c, s) and four multiplications, and a warp of the strip's own sweeps finds its
// Q rotations one per lane, then shuffles them to all lanes.  A sweep outside its
// rows is the identity (c = 1, s = 0): it passes rows on unchanged, so every sweep runs
// every wave.  One block barrier per wave.
//
// Measured (H100, float32, 8 sweeps per warp): about 1.3 us per wave with p = 200 (the
// last strip applies 200 rotations to its 32 columns per wave), 0.7 us with p = 20; a
// single block doing all p^2 / 2 single-value rotations of a wave took 9.5 us at p = 200.
// With 4 sweeps per warp, removing 100 rows of 12000 x 6000 (6099 waves): 5.8 ms, the
// bound of the whole update (7.8 ms; the apply kernel beside it needs 4.7).  Nsight
// Compute: about 170 instructions per warp and wave (for 16 multiplications), a warp
// eligible half the cycles, the wave's barrier the largest stall (18% of samples), the
// fence and copy every STRIP_CHUNK waves 7%.  A warp of earlier strips' sweeps needs only
// (c, s) loads and its rotations, but compiled in one loop with the own sweeps' warps it
// pays for both.  Two loops, one per kind of warp, made this launch 4-19% faster where
// most warps are of earlier strips (p >= 80; float32 with 4 and 8 sweeps per warp, float64
// with 4) but 7-14% slower with 2 sweeps per warp and in float64 with 8 (registers): not
// adopted.  Tried again later on an H200 for 4 sweeps per warp (and 8 in float), the
// loop a generic lambda compiled per kind of warp: whole updates removing 80 or 100 rows
// (Tables 10, 11) took 0.98 to 1.04 of their time, and removing 20 rows (2 sweeps per
// warp, the same loop compiled once through the lambda) 1.05 to 1.14: not adopted either.
// Shorter waves need fewer instructions in the own sweeps' warps.
//
// Q is 2, 4 or 8 (a template parameter): a wave costs the instructions of one warp's Q
// sweeps, so fewer sweeps per warp and more warps make shorter waves, as long as one
// launch holds all sweeps (removing 20 to 100 rows of 12000: 7-10% faster with Q = 4
// than 8, H100, float32).
//
// Passes.  A pass runs the sweeps s_lo .. s_hi - 1 (at most 32 Q: the registers of one
// block) over the columns s_lo .. p - 1, waves t_begin .. t_end - 1 of the whole
// schedule; a later pass depends on an earlier one only through D.  Passes run one launch
// after the other, or pipelined in one launch: there the block of pass r over a strip
// takes its rows of D from the block of pass r - 1 over the same strip as that block
// writes them, waiting on its count of waves done (a chunk ahead, before each chunk),
// and after its last wave for STRIP_DONE, which a block sets once it has written the
// rows it still held and the block it follows has set it.  A wave's time grows with the
// sweeps a block holds (H100, float32, removing 100 rows of 12000 x 10000, passes one
// launch after the other: 0.86 us with all 100 in one block, 0.62 with 64, 0.48 with 32,
// 0.42 with 16), so passes of 32, all at once, made the rotation kernel of that update
// take 5.2 ms instead of 8.3 (float64: 7.6 instead of 11.2); the update gains where the
// rotations bound it (gpu._pipeline_pays).
//
// passes: STRIP_PASS ints per pass (s_lo, s_hi, t_begin, t_end, where its strips' counts
// start in progress, its strips), npass of them in this launch.  C, S: nwaves x p, every
// slot of a pass's sweeps over its waves written (the identity where a sweep does not
// rotate).  progress: one int per strip and pass, zero.  Launch with 32 ceil(s / Q)
// threads for passes of at most s sweeps and gpu._strip_smem(size, Q) bytes of dynamic
// shared memory; blocks first .. first + gridDim.x - 1 of the launch's passes (taken in
// order), all resident at once (a cooperative launch), the blocks before `first`
// finished.

#define STRIP_CHUNK 16            // waves of earlier strips' rotations copied at once
#define STRIP_PREFETCH 4          // waves ahead that a row of D is fetched
#define STRIP_NT 1024
#define STRIP_PASS 6              // ints per pass: s_lo, s_hi, t_begin, t_end, progress at, blocks
#define STRIP_DONE 0x40000000     // a strip's count of waves once it has written all its rows

// The rotation that zeroes b against a (c = |a| / r, s = sign(a) b / r, r = hypot(a, b)),
// or the identity where `on` is false or a = b = 0, without branches.  a and b are
// scaled by 2^-e, m = 2^e 1.f their larger magnitude, so that a^2 + b^2 neither
// overflows nor underflows.
//
// In float, 1 / r is rsqrtf's estimate and one Newton step whose residual 1 - r2 inv^2
// is formed without rounding error (r2 inv split into h + hl by an FMA).  The plain step,
// inv (1.5 - 0.5 r2 inv inv), rounds its residual with a bias, so c^2 + s^2 came out
// off 1 by a fraction of an ulp of the same sign, rotation after rotation: a sweep
// chains m of them, and on an H100 a rank-1 update of 8000 x 1000 with full Q left
// max |Q^T Q - I| at 5.1e-5 and ||QR - A|| / ||A|| at 8.7e-5 (2.8e-6 and 6.0e-6 now;
// LAPACK's rotations on the CPU 1.1e-5 and 1.3e-5), and adding a column at the front of
// 12000 x 3000 (thin Q) 8.3e-5 (4.1e-6 now), with no change in time.  IEEE sqrtf and
// divisions gave the same accuracy but made the rank-1 update 15 percent slower.
__device__ __forceinline__ void strip_givens(float a, float b, bool on, float& c, float& s)
{
    const float m = fmaxf(fabsf(a), fabsf(b));
    const float k = __int_as_float(0x7f000000 - (__float_as_int(m) & 0x7f800000));
    const float x = a * k, y = b * k, r2 = x * x + y * y;
    float inv = rsqrtf(r2);
    const float h = r2 * inv, hl = fmaf(r2, inv, -h);       // r2 inv = h + hl exactly
    const float e = fmaf(-hl, inv, fmaf(-h, inv, 1.f));      // 1 - r2 inv^2, to rounding
    inv = fmaf(0.5f * inv, e, inv);
    on = on && m != 0.f;
    c = on ? fabsf(x) * inv : 1.f;
    s = on ? (a < 0.f ? -y : y) * inv : 0.f;
}

__device__ __forceinline__ void strip_givens(double a, double b, bool on, double& c, double& s)
{
    const double m = fmax(fabs(a), fabs(b));
    const double k = __longlong_as_double(0x7fe0000000000000LL -
                                          (__double_as_longlong(m) & 0x7ff0000000000000LL));
    const double x = a * k, y = b * k, inv = rsqrt(x * x + y * y);
    on = on && m != 0.0;
    c = on ? fabs(x) * inv : 1.0;
    s = on ? (a < 0.0 ? -y : y) * inv : 0.0;
}

template <typename T>
__device__ __forceinline__ void strip_copy_async(T* dst, const T* src)
{
    // one value from device memory into shared memory, without waiting for it
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if constexpr (sizeof(T) == 4)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(s), "l"(src) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(s), "l"(src) : "memory");
}

__device__ __forceinline__ void strip_sync(int nthreads)
{
    // the block's working warps only (the others have left)
    asm volatile("bar.sync 1, %0;" :: "r"(nthreads) : "memory");
}

template <typename T, int Q>
__device__ void sweep_strips(T* D, int p, const int* tops, const int* bottoms, int B,
                             const int* passes, int npass, T* C, T* S, int* progress,
                             int first)
{
    constexpr int G = sizeof(T) == 4 || Q <= 4 ? Q : Q / 2;
    constexpr int NW = STRIP_NT / 32, SLOTS = STRIP_PREFETCH + 1;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* cs = reinterpret_cast<T*>(smem_raw);          // CHUNK x 32 Q x (c, s): earlier strips'
    T* hand = cs + 2 * STRIP_CHUNK * NW * Q;         // NW x 2 x 32: rows between warps
    T* fetch = hand + NW * 2 * 32;                   // SLOTS x 32: rows of D coming in
    // this block's pass and strip, and for a pass after the first in this launch the
    // block of the pass before over the same columns, whose rows of D it takes
    int b = first + blockIdx.x, ip = 0;
    while (ip + 1 < npass && b >= passes[STRIP_PASS * ip + 5])
        b -= passes[STRIP_PASS * ip++ + 5];
    const int* pass = passes + STRIP_PASS * ip;
    const int s_lo = pass[0], s_hi = pass[1], t_begin = pass[2], t_end = pass[3];
    int* const prog = progress + pass[4];
    const int* before_pass = pass - STRIP_PASS;
    const int* prev = ip > 0 ? progress + before_pass[4] + b + (s_lo - before_pass[0]) / 32
                             : nullptr;
    const int prev_end = ip > 0 ? before_pass[3] : 0;
    // the pass before has written the rows of D its waves before x hand on (after its
    // last wave, with the rows it held: STRIP_DONE)
    auto wait_prev = [&](int x) {
        if (prev != nullptr) flag_wait(prev, x <= prev_end ? x : STRIP_DONE, 32);
    };
    const int c0 = s_lo + 32 * b;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int ncol = min(32, p - c0);
    const int s_end = min(s_hi, c0 + 32);            // sweeps s_lo .. s_end - 1 reach the strip
    const int n_ext = min(c0, s_hi) - s_lo;          // of which earlier strips' (s < s_lo + n_ext)
    const int nwa = (s_end - s_lo + Q - 1) / Q;      // working warps
    const int n_own = (s_hi - s_lo + 31) / 32;       // strips that compute sweeps
    const int s0 = s_lo + warp * Q;                  // this warp's first sweep
    if (warp >= nwa) return;
    // this lane's value of row r of D, and whether it has one (row and column in D)
    auto at = [&](int r) { return D + (size_t)r * p + c0 + lane; };
    auto in_d = [&](int r) { return r >= 0 && r <= B && lane < ncol; };
    auto row_of = [&](int r) { return in_d(r) ? *at(r) : T(0); };
    // the rows each sweep holds before wave t_begin: its lower row, and its upper row in
    // its inbox (the first sweep of a warp takes it from shared memory)
    if (prev != nullptr) {                           // the rows below, and the first fetches
        if (threadIdx.x == 0) wait_prev(t_begin + STRIP_PREFETCH - 1);
        strip_sync(nwa * 32);
    }
    T car[Q], inb[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const int i = B - t_begin + 2 * (s0 + q);
        car[q] = row_of(i);
        inb[q] = row_of(i - 1);
    }
    hand[(warp * 2 + ((t_begin - 1) & 1)) * 32 + lane] = inb[0];
    if (warp == 0)                                   // the first sweep's next rows of D
        for (int d = 0; d < STRIP_PREFETCH; ++d)
            fetch[((t_begin + d) % SLOTS) * 32 + lane] = row_of(B - (t_begin + d) + 2 * s_lo - 1);
    // the strip's own sweeps' waves: sweep c0 + j rotates at waves[j].x <= t <= waves[j].y
    __shared__ int2 waves[32];
    if (warp == 0 && c0 + lane < s_end)
        waves[lane] = make_int2(B - bottoms[c0 + lane] + 2 * (c0 + lane) + 1,
                                B - tops[c0 + lane] + 2 * (c0 + lane) - 1);
    const int before = min(b, n_own) - 1;            // the strip this one waits for
    const int* seen = prog + max(before, 0);
    strip_sync(nwa * 32);
    int cw = 0;                                      // (t - t_begin) mod CHUNK
    for (int t = t_begin; t < t_end; ++t) {
        if ((n_ext > 0 || prev != nullptr) && cw == 0) {   // the next waves of earlier
            const int nwv = min(STRIP_CHUNK, t_end - t);   // strips, and of the pass before
            if (threadIdx.x == 0) {
                if (n_ext > 0) flag_wait(seen, t + nwv, 32);
                wait_prev(t + nwv + STRIP_PREFETCH - 1);   // the rows this chunk fetches
            }
            strip_sync(nwa * 32);
            if (n_ext > 0) {
                for (int w = warp; w < nwv; w += nwa)   // published by another SM: through L2
                    for (int s = lane; s < n_ext; s += 32) {
                        const size_t g = (size_t)(t + w) * p + s_lo + s;
                        cs[2 * (w * NW * Q + s)] = __ldcg(C + g);
                        cs[2 * (w * NW * Q + s) + 1] = __ldcg(S + g);
                    }
                strip_sync(nwa * 32);
            }
        }
        if (warp == 0) {                             // the row of D for wave t + PREFETCH
            const int tf = t + STRIP_PREFETCH, r = B - tf + 2 * s_lo - 1;
            T* slot = fetch + (tf % SLOTS) * 32 + lane;
            if (in_d(r)) strip_copy_async(slot, at(r));
            else *slot = T(0);
            asm volatile("cp.async.commit_group;" ::: "memory");
        }
        inb[0] = warp == 0 ? fetch[(t % SLOTS) * 32 + lane]
                           : hand[(warp * 2 + ((t - 1) & 1)) * 32 + lane];
        // A warp holds earlier strips' sweeps or this strip's own (which start at c0, a
        // multiple of Q past s_lo); sweeps past s_end are the identity and lead nowhere.
        // Its sweeps go in groups of G, the last group first, each group's rotations
        // found together, then applied last sweep first: every inbox is read before the
        // sweep above refills it.  G = Q but for Q = 8 in double, where Q would not fit
        // the registers: there two groups' chains of shuffles and square roots come one
        // after the other in every wave.  (So they did for Q = 2 and 4 in double, as
        // groups of Q / 2: one group made removing 20 rows of 12000 x 6000 and 8000 x
        // 6000, and 60 of 12000 x 10000 (Q = 2), 13 to 17 percent faster, float64, H100;
        // removing 100 or 80 (Q = 4) within 2 percent.  Finding all Q = 8 rotations at
        // once and applying them in two groups left adding 200 columns as it was.)
        const bool own = s0 >= c0;
#pragma unroll
        for (int g = Q - G; g >= 0; g -= G) {
            T c[G], sn[G];
            bool on[G];
            if (own) {
                // Sweep s0 + g + u's pivots (its column, lane j) go to lane u, which finds
                // that rotation; then every lane gets all G of them.  (Each lane finding
                // every rotation would cost G times the arithmetic.)
                T a_u = 0, b_u = 0;
#pragma unroll
                for (int u = 0; u < G; ++u) {
                    const int j = (s0 + g + u - c0) & 31;
                    const T a = __shfl_sync(0xffffffffu, inb[g + u], j);
                    const T bb = __shfl_sync(0xffffffffu, car[g + u], j);
                    if (lane == u) {
                        a_u = a;
                        b_u = bb;
                    }
                }
                const int s_u = s0 + g + lane;
                const int2 w = waves[(s_u - c0) & 31];
                const bool on_u = lane < G && s_u < s_end && t >= w.x && t <= w.y;
                T c_u, sn_u;
                strip_givens(a_u, b_u, on_u, c_u, sn_u);
                if (lane < G && s_u < s_end) {       // for the strips after this one
                    C[(size_t)t * p + s_u] = c_u;
                    S[(size_t)t * p + s_u] = sn_u;
                }
                const unsigned on_mask = __ballot_sync(0xffffffffu, on_u);
#pragma unroll
                for (int u = 0; u < G; ++u) {
                    c[u] = __shfl_sync(0xffffffffu, c_u, u);
                    sn[u] = __shfl_sync(0xffffffffu, sn_u, u);
                    on[u] = (on_mask >> u) & 1u;
                }
            } else {
                const T* csw = cs + 2 * (cw * NW * Q + s0 + g - s_lo);
#pragma unroll
                for (int u = 0; u < G; ++u) {
                    on[u] = false;
                    c[u] = s0 + g + u < s_end ? csw[2 * u] : T(1);
                    sn[u] = s0 + g + u < s_end ? csw[2 * u + 1] : T(0);
                }
            }
#pragma unroll
            for (int u = G - 1; u >= 0; --u) {
                const int q = g + u, s = s0 + q;
                const T up = c[u] * inb[q] + sn[u] * car[q];
                T down = c[u] * car[q] - sn[u] * inb[q];
                if (on[u] && lane == s - c0) down = T(0);   // the zero made, exactly
                car[q] = up;
                if (s + 1 == s_end) {                // out of the strip's last sweep
                    const int r = B - t + 2 * s;
                    if (in_d(r)) *at(r) = down;
                }
                if (q + 1 < Q) inb[q + 1] = down;
                else if (warp + 1 < nwa) hand[((warp + 1) * 2 + (t & 1)) * 32 + lane] = down;
            }
        }
        if (warp == 0)                               // the row fetched PREFETCH - 1 waves ago
            asm volatile("cp.async.wait_group %0;" :: "n"(STRIP_PREFETCH - 1) : "memory");
        cw = cw + 1 == STRIP_CHUNK ? 0 : cw + 1;
        if (cw == 0 || t + 1 == t_end) {
            strip_sync(nwa * 32);                    // every thread's C and S, then the count
            if (threadIdx.x == 0) flag_release(prog + b, t + 1);
        } else {
            strip_sync(nwa * 32);
        }
    }
    // the rows still held: after wave t_end - 1 sweep s has row B - t_end + 2 s, and
    // its inbox row B - t_end + 2 s - 1 (the first sweep's is still in D)
    if (warp == 0) asm volatile("cp.async.wait_group 0;" ::: "memory");
    if (warp > 0) inb[0] = hand[(warp * 2 + ((t_end - 1) & 1)) * 32 + lane];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const int s = s0 + q, r = B - t_end + 2 * s;
        if (s < s_end && in_d(r)) *at(r) = car[q];
        if (s < s_end && s > s_lo && in_d(r - 1)) *at(r - 1) = inb[q];
    }
    // done, once the pass before is (so that, counted from the last pass, done means every
    // pass done: the apply kernel waits on the last pass's last strip)
    strip_sync(nwa * 32);
    if (threadIdx.x == 0) {
        if (prev != nullptr) flag_wait(prev, STRIP_DONE, 32);
        flag_release(prog + b, STRIP_DONE);
    }
}

// sweep_strips_{f32,f64}_q{2,4,8}: Q sweeps per warp
#define STRIP_KERNEL(T, NAME, Q)                                                        \
    extern "C" __global__ void __launch_bounds__(STRIP_NT)                              \
    NAME(T* D, int p, const int* tops, const int* bottoms, int B, const int* passes,    \
         int npass, T* C, T* S, int* progress, int first)                               \
    { sweep_strips<T, Q>(D, p, tops, bottoms, B, passes, npass, C, S, progress, first); }
STRIP_KERNEL(float, sweep_strips_f32_q2, 2)
STRIP_KERNEL(float, sweep_strips_f32_q4, 4)
STRIP_KERNEL(float, sweep_strips_f32_q8, 8)
STRIP_KERNEL(double, sweep_strips_f64_q2, 2)
STRIP_KERNEL(double, sweep_strips_f64_q4, 4)
STRIP_KERNEL(double, sweep_strips_f64_q8, 8)
