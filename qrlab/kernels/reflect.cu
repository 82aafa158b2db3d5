// One Householder panel, factored and applied, in one launch (float and double).
//
// Removing columns, adding rows and the Cholesky update all reduce narrow panels of
// w <= 32 columns over h = w + p rows; every panel is a chain of w dependent reflectors
// (the critical path) followed by the same reflectors on all trailing columns (the bulk).
// Launching cuSOLVER's geqrf, then T, then three GEMMs per panel costs more than the
// arithmetic.  Here every block of the grid loads the panel into shared memory and
// factors it itself (the blocks do identical work, so they agree bit for bit), then
// applies the w reflectors to its own 32 trailing columns in compact WY form:
//     Y = V^T J X,   Z = T^T Y,   X -= V Z,
// with T^T Y computed by forward substitution from G = V^T J V (no T is formed).
// The last block to have loaded the panel writes the reduced panel back, so no block
// reads columns another has already overwritten; it then resets the counter.
//
// Rows are gathered from two spans: panel row r is row a0 + r of A for r < ha and row
// b0 + r - ha of B after.  J = diag(1 on A's rows, sgn on B's rows): sgn = -1 gives the
// hyperbolic reflectors of a Cholesky downdate (H = I - tau u u^T J, H^T J H = J).
// With positive != 0 a reflector is built even when the column below is already zero,
// so that every beta = -sign(alpha) ||x||_J comes out positive for negative alpha.
// A pivot alpha^2 + sigma that is not positive (only possible for sgn < 0) or not finite
// is a breakdown: its column goes to *fail (atomicMin) and the reflector is skipped.
//
// Layout: A, B row-major with leading dimensions lda, ldb; columns c0 .. c0+w are the
// panel, c0+w .. ncols the trailing columns (32 per block).  Vout (h x w, row-major,
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
__device__ __forceinline__ T warp_sum(T x)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

template <typename T>
__device__ void reflect_panel(T* A, long lda, int a0, int ha, T* B, long ldb, int b0, int hb,
                              T sgn, int positive, int c0, int w, int ncols,
                              T* Vout, T* tauout, int* counter, int* fail, int fail_base)
{
    extern __shared__ unsigned char smem_raw[];
    QRLAB_PHASE(0)
    const int h = ha + hb;
    T* S = reinterpret_cast<T*>(smem_raw);   // the panel, column-major, w columns of h
    T* G = S + (size_t)h * w;                 // w x w, G[a w + b] = u_a^T J u_b for a < b
    T* Y = G + w * w;                         // w x 32: V^T J X, then Z = T^T Y
    T* tau = Y + w * 32;                      // w
    T* dots = tau + w;                        // w: this step's column dots
    T* scl = dots + w;                        // w: the scale of each reflector vector
    __shared__ int writer, first_fail;
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5;
    const int nwarps = nt >> 5;
    auto row = [&](int r) -> T* {
        return r < ha ? A + (long)(a0 + r) * lda : B + (long)(b0 + r - ha) * ldb;
    };

    // 1. the panel into shared memory (a row's w columns are contiguous: coalesced)
    for (int idx = tid; idx < h * w; idx += nt) {
        int r = idx / w, c = idx - r * w;
        S[(size_t)c * h + r] = row(r)[c0 + c];
    }
    if (tid == 0) first_fail = 0x7fffffff;
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        writer = atomicAdd(counter, 1) == (int)gridDim.x - 1;
    }
    QRLAB_PHASE(1)

    // 2. factor.  Step j turns column j into u_j = [e_j; scale_j x_j] and applies H_j to
    //    the later columns.  x_j stays unscaled until the end (scl[j] keeps scale_j), so
    //    one pass of dots serves both the later columns (for H_j) and the earlier ones
    //    (for G[a][j] = u_a^T J u_j): every warp has work in every step.
    for (int j = 0; j < w; ++j) {
        const T* xj = S + (size_t)j * h;
        for (int c = warp; c < w; c += nwarps) {
            const T* xc = S + (size_t)c * h;
            T d = 0;
            for (int r = j + 1 + lane; r < h; r += 32) {
                T prod = xj[r] * xc[r];
                d += r < ha ? prod : sgn * prod;
            }
            d = warp_sum(d);
            if (lane == 0) dots[c] = d;
        }
        __syncthreads();
        // every thread derives the same scalars from the same shared values
        const T alpha = xj[j], sigma = dots[j];
        const T pivot = alpha * alpha + sigma;
        T t = 0, scale = 0, beta = alpha;
        if (sigma != T(0) || positive) {
            if (pivot > T(0) && isfinite(pivot)) {
                T norm = sqrt(pivot);
                beta = alpha >= T(0) ? -norm : norm;
                t = (beta - alpha) / beta;
                scale = T(1) / (alpha - beta);
            } else if (tid == 0) {
                first_fail = min(first_fail, j);
            }
        }
        for (int c = warp; c < w; c += nwarps) {
            T* xc = S + (size_t)c * h;
            if (c > j) {
                const T dc = t * (xc[j] + scale * dots[c]);
                const T f = dc * scale;
                for (int r = j + 1 + lane; r < h; r += 32) xc[r] -= f * xj[r];
                if (lane == 0) xc[j] -= dc;
            } else if (c < j && lane == 0) {         // u_a[j] = scl_a x_a[j], J_j = 1
                G[c * w + j] = scl[c] * (xc[j] + scale * dots[c]);
            }
        }
        if (tid == 0) { tau[j] = t; scl[j] = scale; S[(size_t)j * h + j] = beta; }
        __syncthreads();
    }
    for (int idx = tid; idx < h * w; idx += nt) {    // the vectors, scaled
        int c = idx / h, r = idx - c * h;
        if (r > c) S[idx] *= scl[c];
    }
    QRLAB_PHASE(2)
    for (int idx = tid; idx < w * 32; idx += nt) Y[idx] = 0;
    __syncthreads();

    // 4. this block's 32 trailing columns: lane = column, warps share the rows
    const int col0 = c0 + w + blockIdx.x * 32;
    const int col = col0 + lane;
    const bool active = col < ncols;
    // V[r][i]: 1 on the diagonal, the stored vector below it, 0 above
    auto vri = [&](int r, int i) -> T { return r == i ? T(1) : S[(size_t)i * h + r]; };
    if (col0 < ncols) {
        T acc[QRLAB_MAXW];
#pragma unroll
        for (int i = 0; i < QRLAB_MAXW; ++i) acc[i] = 0;
        if (active) {
            for (int r = warp; r < h; r += nwarps) {
                T x = row(r)[col];
                if (r >= ha) x *= sgn;
                const int imax = min(w, r + 1);
#pragma unroll
                for (int i = 0; i < QRLAB_MAXW; ++i)
                    if (i < imax) acc[i] += vri(r, i) * x;
            }
#pragma unroll
            for (int i = 0; i < QRLAB_MAXW; ++i)
                if (i < w) atomicAdd(&Y[i * 32 + lane], acc[i]);
        }
        __syncthreads();
        QRLAB_PHASE(3)
        // Z = T^T Y by forward substitution: Z_i = tau_i (Y_i - sum_{q<i} G_qi Z_q)
        if (warp == 0 && active) {
            for (int i = 0; i < w; ++i) {
                T s = Y[i * 32 + lane];
                for (int q = 0; q < i; ++q) s -= G[q * w + i] * Y[q * 32 + lane];
                Y[i * 32 + lane] = tau[i] * s;
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
    }

    QRLAB_PHASE(5)
    // 5. the reduced panel [Rp; 0] (and V, tau) from the block that loaded it last
    if (writer) {
        for (int idx = tid; idx < h * w; idx += nt) {
            int r = idx / w, c = idx - r * w;
            row(r)[c0 + c] = (r <= c) ? S[(size_t)c * h + r] : T(0);
            if (Vout) Vout[idx] = (r < c) ? T(0) : vri(r, c);
        }
        if (tauout)
            for (int i = tid; i < w; i += nt) tauout[i] = tau[i];
        if (tid == 0) {
            if (first_fail != 0x7fffffff) atomicMin(fail, fail_base + c0 + first_fail);
            *counter = 0;                    // ready for the next launch
        }
    }
    QRLAB_PHASE(6)
}

extern "C" {
__global__ void __launch_bounds__(512)
reflect_panel_f32(float* A, long lda, int a0, int ha, float* B, long ldb, int b0, int hb,
                  float sgn, int positive, int c0, int w, int ncols, float* Vout,
                  float* tauout, int* counter, int* fail, int fail_base)
{ reflect_panel<float>(A, lda, a0, ha, B, ldb, b0, hb, sgn, positive, c0, w, ncols, Vout,
                       tauout, counter, fail, fail_base); }
__global__ void __launch_bounds__(512)
reflect_panel_f64(double* A, long lda, int a0, int ha, double* B, long ldb, int b0, int hb,
                  double sgn, int positive, int c0, int w, int ncols, double* Vout,
                  double* tauout, int* counter, int* fail, int fail_base)
{ reflect_panel<double>(A, lda, a0, ha, B, ldb, b0, hb, sgn, positive, c0, w, ncols, Vout,
                        tauout, counter, fail, fail_base); }
}
