// Fused Givens sweeps for qrlab (float and double).
//
// The papers launch two kernels per wave of rotations (makeGivens, applyGivens), so an
// update costs O(m) launches.  Here one launch computes every rotation of a block of
// pipelined sweeps, and a second multiplies the rotations of each group of waves into a
// small orthogonal matrix, which is then applied to R and Q by matrix products.
//
// Layout: D is the driver block, N rows by p columns, row-major.  Sweep s zeroes column s
// bottom-up; at wave t it rotates rows (i-1, i) with i = B - t + 2 s, when
// tops[s] < i < bottoms[s].  A rotation [[c, s], [-s, c]] makes c*a + s*b = r, -s*a + c*b = 0.

template <typename T> __device__ __forceinline__ T qr_hypot(T a, T b);
template <> __device__ __forceinline__ float qr_hypot<float>(float a, float b) { return hypotf(a, b); }
template <> __device__ __forceinline__ double qr_hypot<double>(double a, double b) { return hypot(a, b); }

// One block computes all rotations: waves depend on each other, a block barrier orders
// them.  C, S: nwaves x p; an inactive slot gets the identity (c = 1, s = 0).
//
// WINDOW = false: D is read and written in device memory (any p).
// WINDOW = true: the rows in flight stay in shared memory, column by column.  At wave t
// sweep s rotates rows B - t + 2s - 1 and B - t + 2s; above it the rows are untouched,
// below it its column is zero (it made those zeros), so only sweeps s <= j touch column
// j, and only its rows B - t - 1 .. B - t + 2j.  Column j keeps those 2j + 2 rows, plus
// QRLAB_PREFETCH rows above them, in a ring of L_j = 2j + 2 + QRLAB_PREFETCH slots
// (p^2 + (1 + QRLAB_PREFETCH) p values in all, half of what whole rows would take).
// Each wave loads the row needed QRLAB_PREFETCH waves later (issued at its start, stored
// at its end, so the load overlaps the wave's arithmetic) into the slot that row
// B - t + 2j + 1 left, and writes back row B - t + 2j, which leaves column j's rows.
// Row top_t + o, top_t = B - t - 1 - QRLAB_PREFETCH, is in slot (o + top_t) mod L_j.
#define QRLAB_PREFETCH 5
template <typename T, bool WINDOW>
__device__ void sweep_rotations(T* D, int p, const int* tops, const int* bottoms, int B,
                                int nwaves, T* C, T* S)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T** rowa = reinterpret_cast<T**>(smem_raw); // rows i - 1 and i of each active sweep
    T** rowb = rowa + p;                        // (in D, without a window)
    T* sc = reinterpret_cast<T*>(rowb + p);
    T* ss = sc + p;
    T* win = ss + p;                            // the columns' rings (empty without)
    int* on = reinterpret_cast<int*>(win + (WINDOW ? (size_t)p * (p + 1 + QRLAB_PREFETCH) : 0));
    // on[s]: whether sweep s rotates in this wave
    const int tid = threadIdx.x, nt = blockDim.x;
    // a sweep's thread keeps its rows' range (s < p <= nt for the window, where it matters)
    const int my_top = tid < p ? tops[tid] : 0, my_bottom = tid < p ? bottoms[tid] : 0;
    auto ring_len = [&](int j) { return 2 * j + 2 + QRLAB_PREFETCH; };
    auto ring = [&](int j) { return win + (size_t)j * (j + 1 + QRLAB_PREFETCH); };
    auto head = [&](int j, int t) {              // (B - t - 1 - PREFETCH) mod L_j
        const int L = ring_len(j), h = (B - t - 1 - QRLAB_PREFETCH) % L;
        return h < 0 ? h + L : h;
    };
    auto wrap = [&](int o, int L) { return o >= L ? o - L : o; };
    // column j of thread tid, and its share g of the active sweeps (G groups)
    const int G = p <= nt ? nt / p : 1;
    const int g = p <= nt ? tid / p : 0;
    const int j0 = g < G ? (p <= nt ? tid % p : tid) : p;
    const int jstep = p <= nt ? p : nt;
    if (WINDOW) {                                // the rows of wave 0 and its prefetches
        for (int j = j0; j < p; j += jstep)
            for (int o = g; o < ring_len(j); o += G) {
                const int r = B - 1 - QRLAB_PREFETCH + o;
                if (r >= 0 && r <= B) ring(j)[wrap(o + head(j, 0), ring_len(j))] = D[(size_t)r * p + j];
            }
        __syncthreads();
    }
    for (int t = 0; t < nwaves; ++t) {
        const int r_in = B - t - 1 - QRLAB_PREFETCH;
        T pref = 0;
        if (WINDOW && r_in >= 0 && tid < p) pref = D[(size_t)r_in * p + tid];
        __syncthreads();
        for (int s = tid; s < p; s += nt) {
            int i = B - t + 2 * s;
            T c = 1, sn = 0;
            const bool active = s == tid ? i > my_top && i < my_bottom
                                         : i > tops[s] && i < bottoms[s];
            if (active) {
                T a, b;
                if (WINDOW) {                    // rows i - 1, i: offsets 2s + PREFETCH, + 1
                    const int L = ring_len(s), h = head(s, t);
                    a = ring(s)[wrap(2 * s + QRLAB_PREFETCH + h, L)];
                    b = ring(s)[wrap(2 * s + QRLAB_PREFETCH + 1 + h, L)];
                } else {
                    rowa[s] = D + (size_t)(i - 1) * p;
                    rowb[s] = D + (size_t)i * p;
                    a = rowa[s][s];
                    b = rowb[s][s];
                }
                T r = qr_hypot<T>(a, b);
                if (r != T(0)) {
                    const T inv = T(1) / r;      // one division for both
                    c = fabs(a) * inv;
                    sn = (a < T(0) ? -b : b) * inv;
                }
            }
            on[s] = active;
            sc[s] = c; ss[s] = sn;
            C[(size_t)t * p + s] = c;
            S[(size_t)t * p + s] = sn;
        }
        __syncthreads();
        if (WINDOW) {
            // Thread (g, j) owns column j and every G-th sweep s <= j.
            for (int j = j0; j < p; j += jstep) {
                T* col = ring(j);
                const int L = ring_len(j), h = head(j, t);
                for (int s = g; s <= j; s += G) {
                    if (!on[s]) continue;
                    const int ia = wrap(2 * s + QRLAB_PREFETCH + h, L), ib = wrap(ia + 1, L);
                    const T c = sc[s], sn = ss[s], xa = col[ia], xb = col[ib];
                    col[ia] = c * xa + sn * xb;
                    col[ib] = (j == s) ? T(0) : c * xb - sn * xa;   // the zero made
                }
            }
        } else {
            // Thread (g, j) owns column j and every G-th active sweep s <= j (columns
            // left of a sweep are zero on its rows); four rotations' loads are issued
            // before any store, so four memory accesses are in flight per thread (the
            // compiler cannot reorder them itself: the rows might alias as far as it knows).
            for (int j = j0; j < p; j += jstep) {
                int sv[4], nv = 0;
                for (int s = g; s <= j; s += G) {
                    if (!on[s]) continue;
                    sv[nv++] = s;
                    if (nv < 4) continue;
                    nv = 0;
                    T *pa[4], *pb[4], xa[4], xb[4];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        pa[u] = rowa[sv[u]] + j;
                        pb[u] = rowb[sv[u]] + j;
                        xa[u] = *pa[u];
                        xb[u] = *pb[u];
                    }
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        T c = sc[sv[u]], sn = ss[sv[u]];
                        *pa[u] = c * xa[u] + sn * xb[u];
                        *pb[u] = (j == sv[u]) ? T(0) : c * xb[u] - sn * xa[u];
                    }
                }
                for (int a = 0; a < nv; ++a) {
                    int s = sv[a];
                    T c = sc[s], sn = ss[s];
                    T* pa = rowa[s] + j;
                    T* pb = rowb[s] + j;
                    T xa = *pa, xb = *pb;
                    *pa = c * xa + sn * xb;
                    *pb = (j == s) ? T(0) : c * xb - sn * xa;
                }
            }
        }
        __syncthreads();
        if (WINDOW && tid < p) {                 // column tid: one row out, one row in
            const int j = tid, L = ring_len(j), h = head(j, t);
            const int r_out = B - t + 2 * j;     // offset L - 1: no later wave touches it
            if (r_out <= B && r_out >= 0) D[(size_t)r_out * p + j] = ring(j)[wrap(L - 1 + h, L)];
            if (r_in >= 0) ring(j)[h] = pref;    // offset 0: the slot r_out + 1 left
        }
        // (the next wave's first barrier orders these with its reads)
    }
    if (WINDOW) {                                // the rows still in the rings
        __syncthreads();
        for (int j = j0; j < p; j += jstep) {
            const int L = ring_len(j), h = head(j, nwaves - 1);
            for (int o = g; o < L - 1; o += G) { // offsets 0 .. L - 2 of the last wave
                const int r = B - nwaves - QRLAB_PREFETCH + o;
                if (r >= 0 && r <= B) D[(size_t)r * p + j] = ring(j)[wrap(o + h, L)];
            }
        }
    }
}

// Multiply the rotations of wave group g into G[g] (w x w, row-major, starts as I).
// grid = (groups, ceil(w / 32)); 32 columns per block, 8 threads share a column's rows.
template <typename T>
__device__ void accumulate_groups(T* G, int w, const T* C, const T* S, int p,
                                  const int* tops, const int* bottoms, int B, int nwaves,
                                  int waves_per_group, const int* lo)
{
    int g = blockIdx.x;
    int col = blockIdx.y * 32 + (threadIdx.x & 31);
    int lane_row = threadIdx.x >> 5, rows_per = blockDim.x >> 5;
    T* Gg = G + (size_t)g * w * w;
    int t0 = g * waves_per_group, t1 = min(nwaves, t0 + waves_per_group);
    for (int t = t0; t < t1; ++t) {
        if (col < w) {
            for (int s = lane_row; s < p; s += rows_per) {
                int i = B - t + 2 * s;
                if (i > tops[s] && i < bottoms[s]) {
                    T c = C[(size_t)t * p + s], sn = S[(size_t)t * p + s];
                    T* pa = Gg + (size_t)(i - 1 - lo[g]) * w + col;
                    T* pb = pa + w;
                    T xa = *pa, xb = *pb;
                    *pa = c * xa + sn * xb;
                    *pb = c * xb - sn * xa;
                }
            }
        }
        __syncthreads();
    }
}

extern "C" {
__global__ void sweep_rotations_f32(float* D, int p, const int* tops, const int* bottoms,
                                    int B, int nwaves, float* C, float* S)
{ sweep_rotations<float, false>(D, p, tops, bottoms, B, nwaves, C, S); }
__global__ void sweep_rotations_f64(double* D, int p, const int* tops, const int* bottoms,
                                    int B, int nwaves, double* C, double* S)
{ sweep_rotations<double, false>(D, p, tops, bottoms, B, nwaves, C, S); }
__global__ void sweep_rotations_window_f32(float* D, int p, const int* tops, const int* bottoms,
                                           int B, int nwaves, float* C, float* S)
{ sweep_rotations<float, true>(D, p, tops, bottoms, B, nwaves, C, S); }
__global__ void sweep_rotations_window_f64(double* D, int p, const int* tops, const int* bottoms,
                                           int B, int nwaves, double* C, double* S)
{ sweep_rotations<double, true>(D, p, tops, bottoms, B, nwaves, C, S); }
__global__ void accumulate_groups_f32(float* G, int w, const float* C, const float* S, int p,
                                      const int* tops, const int* bottoms, int B, int nwaves,
                                      int wpg, const int* lo)
{ accumulate_groups<float>(G, w, C, S, p, tops, bottoms, B, nwaves, wpg, lo); }
__global__ void accumulate_groups_f64(double* G, int w, const double* C, const double* S, int p,
                                      const int* tops, const int* bottoms, int B, int nwaves,
                                      int wpg, const int* lo)
{ accumulate_groups<double>(G, w, C, S, p, tops, bottoms, B, nwaves, wpg, lo); }
}
