// One Householder panel, factored and applied, in one launch (float and double).
//
// Removing columns, adding rows and the Cholesky update all reduce narrow panels of
// w <= 32 columns over h = w + p rows; every panel is a chain of w dependent reflectors
// (the critical path) followed by the same reflectors on all trailing columns (the bulk).
// Launching cuSOLVER's geqrf, then T, then three GEMMs per panel costs more than the
// arithmetic.  Here every block of the grid loads the panel into shared memory and
// factors it itself (the blocks do identical work, so they agree bit for bit), then
// applies the w reflectors to its tiles of 32 trailing columns in compact WY form:
//     Y = V^T J X,   Z = T^T Y,   X -= V Z,
// with T^T Y computed by forward substitution from G = V^T J V (no T is formed).
// Everything on the critical path is a short chain: two block barriers per reflector,
// the dots of a step reduced through shared memory, not by a chain of shuffles.
// The last block to have loaded the panel writes the reduced panel back, so no block
// reads columns another has already overwritten; it then resets the counter.
//
// Rows are gathered from two spans: panel row r is row a0 + r of A for r < ha and row
// b0 + r - ha of B after.  J = diag(1 on A's rows, sgn on B's rows): sgn = -1 gives the
// hyperbolic reflectors of a Cholesky downdate (H = I - tau u u^T J, H^T J H = J).
// With positive != 0 a reflector is built even when the column below is already zero,
// so that every beta = -sign(alpha) ||x||_J comes out positive for negative alpha.
// A pivot alpha^2 + sigma that is not positive (only possible for sgn < 0) or not finite
// is a breakdown: its column (c0 + j) goes to *fail (atomicMin) and the reflector is
// skipped.
//
// Layout: A, B row-major with leading dimensions lda, ldb; columns c0 .. c0+w are the
// panel, c0+w .. ncols the trailing columns (tiles of 32, dealt out to the blocks).  Vout (h x w, row-major,
// unit diagonal, zeros above) and tauout receive the reflectors when not null.

#define QRLAB_MAXW 32

// Build with -DQRLAB_PHASE_TIMES to record clock64() at the end of each phase (block 0)
// in qrlab_phase_times (benchmarks/profile_panels.py reads them).
#ifdef QRLAB_PHASE_TIMES
__device__ long long qrlab_phase_times[8];
#define QRLAB_PHASE(i) \
    if (blockIdx.x == 0 && threadIdx.x == 0) qrlab_phase_times[i] = clock64();
#else
#define QRLAB_PHASE(i)
#endif

template <typename T>
__device__ void reflect_panel(T* A, long lda, int a0, int ha, T* B, long ldb, int b0, int hb,
                              T sgn, int positive, int c0, int w, int ncols,
                              T* Vout, T* tauout, int* counter, int* fail)
{
    extern __shared__ unsigned char smem_raw[];
    QRLAB_PHASE(0)
    const int h = ha + hb;
    // 512 threads (16 warps, fixed at compile time so that the reductions unroll)
    constexpr int nwarps = 16, nt = 32 * nwarps;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    T* S = reinterpret_cast<T*>(smem_raw);   // the panel, row-major h x w
    T* G = S + (size_t)h * w;                 // w x w, G[a w + b] = u_a^T J u_b for a < b
    T* Y = G + w * w;                         // 32 x 32: column dots, then V^T J X, then Z
    T* tau = Y + 32 * 32;                     // w
    T* half = tau + w;                        // (nwarps / 2) x w x 32: reduction of Y
    __shared__ int writer, first_fail;
    const unsigned full = 0xffffffffu;
    auto row = [&](int r) -> T* {
        return r < ha ? A + (long)(a0 + r) * lda : B + (long)(b0 + r - ha) * ldb;
    };

    // 1. the panel into shared memory (a row's w columns are contiguous: coalesced)
    for (int idx = tid; idx < h * w; idx += nt) {
        int r = idx / w, c = idx - r * w;
        S[idx] = row(r)[c0 + c];
    }
    if (tid == 0) first_fail = 0x7fffffff;
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        writer = atomicAdd(counter, 1) == (int)gridDim.x - 1;
    }
    QRLAB_PHASE(1)

    // 2. factor.  Thread (slice, c): column c, the rows r = slice mod nslices.  Step j turns
    //    column j into u_j = [e_j; scale_j x_j] and applies H_j to the later columns.  x_j
    //    stays unscaled until the end, so one pass of dots serves the later columns (H_j)
    //    and the earlier ones (G[a][j] = u_a^T J u_j).  Two barriers per step.
    const int wl = w <= 8 ? 8 : (w <= 16 ? 16 : 32);   // lanes per row: w rounded up
    const int c = lane % wl, sub = lane / wl;
    const int slice = warp * (32 / wl) + sub, nslices = nwarps * (32 / wl);
    const bool mine = c < w;
    T my_scale = 0;                           // scale of column c's vector, from step c on
    for (int j = 0; j < w; ++j) {
        T d = 0, a_c = 0;
        if (mine) {
#pragma unroll 4
            for (int r = slice; r < h; r += nslices) {
                if (r <= j) continue;
                T prod = S[r * w + j] * S[r * w + c];
                d += r < ha ? prod : sgn * prod;
            }
            a_c = S[j * w + c];               // row j, read before anyone writes it
        }
        for (int o = wl; o < 32; o <<= 1) d += __shfl_xor_sync(full, d, o);
        if (sub == 0 && mine) Y[warp * wl + c] = d;
        __syncthreads();
        T dot = 0;
        if (mine) {
            T part[nwarps];                   // all loads first, then a short sum
#pragma unroll
            for (int g = 0; g < nwarps; ++g) part[g] = Y[g * wl + c];
#pragma unroll
            for (int g = 0; g < nwarps; ++g) dot += part[g];
        }
        // every thread derives the same scalars from the same values
        const T sigma = __shfl_sync(full, dot, j), alpha = __shfl_sync(full, a_c, j);
        const T pivot = alpha * alpha + sigma;
        T t = 0, scale = 0, beta = alpha;
        if (sigma != T(0) || positive) {
            if (pivot > T(0) && isfinite(pivot)) {
                T norm = sqrt(pivot);
                beta = alpha >= T(0) ? -norm : norm;
                t = (beta - alpha) / beta;
                scale = T(1) / (alpha - beta);
            } else if (tid == 0 && first_fail == 0x7fffffff) {
                first_fail = j;               // the rest of the panel is garbage: raised
            }
        }
        if (c == j) my_scale = scale;
        if (mine && c > j) {
            const T dc = t * (a_c + scale * dot);
            const T f = dc * scale;
#pragma unroll 4
            for (int r = slice; r < h; r += nslices)
                if (r > j) S[r * w + c] -= f * S[r * w + j];
            if (slice == 0) S[j * w + c] = a_c - dc;
        } else if (mine && slice == 0) {
            if (c < j) G[c * w + j] = my_scale * (a_c + scale * dot);   // J_j = 1
            else { S[j * w + j] = beta; tau[j] = t; }
        }
        __syncthreads();
    }
    if (mine)                                 // the vectors, scaled
        for (int r = slice; r < h; r += nslices)
            if (r > c) S[r * w + c] *= my_scale;
    __syncthreads();
    QRLAB_PHASE(2)

    // 3. the trailing columns, 32 at a time (tiles blockIdx.x, + gridDim.x, ...): lane =
    //    column, warp = rows r = warp mod nwarps.  A grid no larger than the GPU factors
    //    each panel once per SM, not once per tile.
    // V[r][i]: 1 on the diagonal, the stored vector below it, 0 above (i <= r only)
    auto vri = [&](int r, int i) -> T { return r == i ? T(1) : S[r * w + i]; };
    for (int col0 = c0 + w + blockIdx.x * 32; col0 < ncols; col0 += gridDim.x * 32) {
    const int col = col0 + lane;
    const bool active = col < ncols;
    {
        T acc[QRLAB_MAXW];
#pragma unroll
        for (int i = 0; i < QRLAB_MAXW; ++i) acc[i] = 0;
        if (active) {
#pragma unroll 2
            for (int r = warp; r < h; r += nwarps) {
                T x = row(r)[col];
                if (r >= ha) x *= sgn;
                const int imax = min(w, r + 1);
#pragma unroll
                for (int i = 0; i < QRLAB_MAXW; ++i)
                    if (i < imax) acc[i] += vri(r, i) * x;
            }
        }
        // Y = sum of the warps' acc: halve the number of warps holding partial sums
        for (int n = nwarps / 2; n >= 1; n /= 2) {
            if (warp >= n && warp < 2 * n)
#pragma unroll
                for (int i = 0; i < QRLAB_MAXW; ++i)
                    if (i < w) half[((warp - n) * w + i) * 32 + lane] = acc[i];
            __syncthreads();
            if (warp < n)
#pragma unroll
                for (int i = 0; i < QRLAB_MAXW; ++i)
                    if (i < w) acc[i] += half[(warp * w + i) * 32 + lane];
            __syncthreads();
        }
        QRLAB_PHASE(3)
        // Z = T^T Y by forward substitution, Z_i = tau_i (Y_i - sum_{q<i} G_qi Z_q), in
        // registers (unrolled), then shared with the other warps through Y
        if (warp == 0) {
#pragma unroll
            for (int i = 0; i < QRLAB_MAXW; ++i) {
                if (i < w) {
                    T s = acc[i];
#pragma unroll
                    for (int q = 0; q < i; ++q) s -= G[q * w + i] * acc[q];
                    acc[i] = tau[i] * s;
                    Y[i * 32 + lane] = acc[i];
                }
            }
        }
        __syncthreads();
        QRLAB_PHASE(4)
        if (active) {
            T z[QRLAB_MAXW];
#pragma unroll
            for (int i = 0; i < QRLAB_MAXW; ++i) z[i] = i < w ? Y[i * 32 + lane] : T(0);
            for (int r = warp; r < h; r += nwarps) {
                const int imax = min(w, r + 1);
                T s = 0;
#pragma unroll
                for (int i = 0; i < QRLAB_MAXW; ++i)
                    if (i < imax) s += vri(r, i) * z[i];
                row(r)[col] -= s;
            }
        }
        __syncthreads();                      // Y is rewritten by the next tile
    }
    }
    QRLAB_PHASE(5)

    // 4. the reduced panel [Rp; 0] (and V, tau) from the block that loaded it last
    if (writer) {
        for (int idx = tid; idx < h * w; idx += nt) {
            int r = idx / w, cc = idx - r * w;
            row(r)[c0 + cc] = (r <= cc) ? S[idx] : T(0);
            if (Vout) Vout[idx] = (r < cc) ? T(0) : vri(r, cc);
        }
        if (tauout)
            for (int i = tid; i < w; i += nt) tauout[i] = tau[i];
        if (tid == 0) {
            if (first_fail != 0x7fffffff) atomicMin(fail, c0 + first_fail);
            *counter = 0;                    // ready for the next launch
        }
    }
    QRLAB_PHASE(6)
}

extern "C" {
__global__ void __launch_bounds__(512)
reflect_panel_f32(float* A, long lda, int a0, int ha, float* B, long ldb, int b0, int hb,
                  float sgn, int positive, int c0, int w, int ncols, float* Vout,
                  float* tauout, int* counter, int* fail)
{ reflect_panel<float>(A, lda, a0, ha, B, ldb, b0, hb, sgn, positive, c0, w, ncols, Vout,
                       tauout, counter, fail); }
__global__ void __launch_bounds__(512)
reflect_panel_f64(double* A, long lda, int a0, int ha, double* B, long ldb, int b0, int hb,
                  double sgn, int positive, int c0, int w, int ncols, double* Vout,
                  double* tauout, int* counter, int* fail)
{ reflect_panel<double>(A, lda, a0, ha, B, ldb, b0, hb, sgn, positive, c0, w, ncols, Vout,
                        tauout, counter, fail); }
}
