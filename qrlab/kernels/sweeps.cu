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
// WINDOW = true: the rows in flight stay in shared memory.  At wave t the sweeps touch
// rows B - t - 1 .. B - t + 2p - 2, a window that moves up one row per wave: each wave
// writes back the row that leaves it and loads the row needed PREFETCH waves later
// (issued at the start of the wave, stored at its end, so the load overlaps the wave's
// arithmetic).  Row r lives in slot r mod W.  Used when (2p + 8) p values fit.
#define QRLAB_PREFETCH 5
template <typename T, bool WINDOW>
__device__ void sweep_rotations(T* D, int p, const int* tops, const int* bottoms, int B,
                                int nwaves, T* C, T* S)
{
    extern __shared__ unsigned char smem_raw[];
    const int W = WINDOW ? 2 * p + 8 : 0;
    T** rowa = reinterpret_cast<T**>(smem_raw);  // rows i-1 and i of each active sweep,
    T** rowb = rowa + p;                         // resolved once per wave
    T* win = reinterpret_cast<T*>(rowb + p);     // W x p (empty without a window)
    T* sc = win + (size_t)W * p;
    T* ss = sc + p;
    int* act = reinterpret_cast<int*>(ss + p);   // the sweeps active in this wave, any order
    __shared__ int nact;
    const int tid = threadIdx.x, nt = blockDim.x;
    auto row = [&](int r) { return WINDOW ? win + (size_t)(r % W) * p : D + (size_t)r * p; };
    // column j of thread tid, and its share g of the active sweeps (G groups)
    const int G = p <= nt ? nt / p : 1;
    const int g = p <= nt ? tid / p : 0;
    const int j0 = g < G ? (p <= nt ? tid % p : tid) : p;
    const int jstep = p <= nt ? p : nt;
    if (WINDOW) {                                // rows needed before the first prefetch lands
        for (int r = max(0, B - 1 - QRLAB_PREFETCH); r <= B; ++r)
            for (int j = tid; j < p; j += nt) row(r)[j] = D[(size_t)r * p + j];
        __syncthreads();
    }
    for (int t = 0; t < nwaves; ++t) {
        const int r_in = B - t - 1 - QRLAB_PREFETCH;
        T pref = 0;
        if (WINDOW && r_in >= 0 && tid < p) pref = D[(size_t)r_in * p + tid];
        if (tid == 0) nact = 0;
        __syncthreads();
        for (int s = tid; s < p; s += nt) {
            int i = B - t + 2 * s;
            T c = 1, sn = 0;
            if (i > tops[s] && i < bottoms[s]) {
                rowa[s] = row(i - 1);
                rowb[s] = row(i);
                T a = rowa[s][s], b = rowb[s][s];
                T r = qr_hypot<T>(a, b);
                if (r != T(0)) {
                    c = fabs(a) / r;
                    sn = (a < T(0) ? -b : b) / r;
                }
                act[atomicAdd(&nact, 1)] = s;
            }
            sc[s] = c; ss[s] = sn;
            C[(size_t)t * p + s] = c;
            S[(size_t)t * p + s] = sn;
        }
        __syncthreads();
        // Only the active sweeps' rows.  Thread (g, j) owns column j and every G-th active
        // sweep; four rotations' loads are issued before any store, so four memory
        // accesses are in flight per thread (the compiler cannot reorder them itself: the
        // rows might alias as far as it knows).
        for (int j = j0; j < p; j += jstep) {
            int a = g;
            for (; a + 3 * G < nact; a += 4 * G) {
                T *pa[4], *pb[4], xa[4], xb[4];
                int sv[4];
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    sv[u] = act[a + u * G];
                    pa[u] = rowa[sv[u]] + j;
                    pb[u] = rowb[sv[u]] + j;
                    xa[u] = *pa[u];
                    xb[u] = *pb[u];
                }
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    T c = sc[sv[u]], sn = ss[sv[u]];
                    *pa[u] = c * xa[u] + sn * xb[u];
                    *pb[u] = (j == sv[u]) ? T(0) : c * xb[u] - sn * xa[u];   // the zero made
                }
            }
            for (; a < nact; a += G) {
                int s = act[a];
                T c = sc[s], sn = ss[s];
                T* pa = rowa[s] + j;
                T* pb = rowb[s] + j;
                T xa = *pa, xb = *pb;
                *pa = c * xa + sn * xb;
                *pb = (j == s) ? T(0) : c * xb - sn * xa;
            }
        }
        __syncthreads();
        if (WINDOW) {
            const int r_out = B - t + 2 * (p - 1);       // no later wave touches it
            if (r_out <= B && r_out >= 0)
                for (int j = tid; j < p; j += nt) D[(size_t)r_out * p + j] = row(r_out)[j];
            if (r_in >= 0 && tid < p) row(r_in)[tid] = pref;
            __syncthreads();
        }
    }
    if (WINDOW) {                                // the rows still in the window
        const int lo = max(0, B - nwaves - QRLAB_PREFETCH), hi = min(B, B - nwaves + 2 * p - 1);
        for (int r = lo; r <= hi; ++r)
            for (int j = tid; j < p; j += nt) D[(size_t)r * p + j] = row(r)[j];
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
