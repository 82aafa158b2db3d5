// Householder QR of one panel in shared memory, with its compact WY factor T.
//
// The updates reduce narrow panels (p + nb rows, nb columns) thousands of columns apart
// only in matrix products; what remains sequential is the panel itself, a chain of nb
// dependent reflectors.  cuSOLVER's geqrf spends several launches and a host check per
// panel; here one block keeps the panel in shared memory and builds every reflector and
// T in one launch.
//
// P: h x w, row-major, overwritten LAPACK-style: R on and above the diagonal, the
// reflector vectors (unit diagonal implied) below.  tau: w.  Tm: w x w row-major, upper
// triangular, with H_1 ... H_w = I - V Tm V^T.  Requires h >= w.

template <typename T>
__device__ T block_sum(T x, T* red)
{
    for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) red[warp] = x;
    __syncthreads();
    if (warp == 0) {
        x = lane < (blockDim.x >> 5) ? red[lane] : T(0);
        for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
        if (lane == 0) red[0] = x;
    }
    __syncthreads();
    return red[0];
}

template <typename T>
__device__ void reflect_column(const T* v, T* c, int j, int h, T t)
{
    // c -= t (v^T c) v by one warp, for the reflector v = e_j + v[j + 1 .. h] (its unit
    // entry implied); c[j] is read before the sums meet, so lane 0 may then write it
    int lane = threadIdx.x & 31;
    T cj = c[j], d = 0;
    for (int i = j + 1 + lane; i < h; i += 32) d += v[i] * c[i];
    for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    d = t * (d + cj);
    if (lane == 0) c[j] = cj - d;
    for (int i = j + 1 + lane; i < h; i += 32) c[i] -= d * v[i];
}

template <typename T>
__device__ void householder_columns(T* S, int h, int w, T* tau, T* red, T* bc)
{
    // The panel S (h x w, column-major, in shared memory) reduced in place, LAPACK-style,
    // with the block's threads; tau: w.  red: 32 partial sums, bc: 2 broadcast values.
    int tid = threadIdx.x, nt = blockDim.x, warp = tid >> 5;
    int nwarps = nt >> 5;
    for (int j = 0; j < w; ++j) {
        T* col = S + (size_t)j * h;
        T part = 0;
        for (int i = j + 1 + tid; i < h; i += nt) part += col[i] * col[i];
        T sigma = block_sum<T>(part, red);
        if (tid == 0) {
            T alpha = col[j], t = 0, scale = 0;
            if (sigma != T(0)) {
                T norm = sqrt(alpha * alpha + sigma);
                T beta = alpha >= T(0) ? -norm : norm;
                t = (beta - alpha) / beta;
                scale = T(1) / (alpha - beta);
                col[j] = beta;
            }
            bc[0] = scale; bc[1] = t;
            tau[j] = t;
        }
        __syncthreads();
        T scale = bc[0], t = bc[1];
        if (t == T(0)) continue;                 // already a multiple of e_j: H = I
        for (int i = j + 1 + tid; i < h; i += nt) col[i] *= scale;
        __syncthreads();
        // trailing columns of the panel: one warp per column
        for (int c = j + 1 + warp; c < w; c += nwarps)
            reflect_column(col, S + (size_t)c * h, j, h, t);
        __syncthreads();
    }
}

template <typename T>
__device__ void panel_qr(T* P, int h, int w, T* tau, T* Tm)
{
    extern __shared__ unsigned char smem_raw[];
    T* S = reinterpret_cast<T*>(smem_raw);      // column-major h x w
    T* red = S + (size_t)h * w;                  // 32 partial sums
    T* bc = red + 32;                            // broadcast: scale, tau
    int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5;
    int nwarps = nt >> 5;
    for (int idx = tid; idx < h * w; idx += nt) {
        int i = idx / w, c = idx - i * w;
        S[(size_t)c * h + i] = P[idx];
    }
    __syncthreads();
    householder_columns(S, h, w, tau, red, bc);
    // back to P
    for (int idx = tid; idx < h * w; idx += nt) {
        int i = idx / w, c = idx - i * w;
        P[idx] = S[(size_t)c * h + i];
    }
    // G = V^T V (strictly upper part needed), into Tm as scratch; V has unit diagonal
    for (int e = warp; e < w * w; e += nwarps) {
        int a = e / w, b = e - a * w;
        if (a >= b) { if (lane == 0) Tm[e] = 0; continue; }
        const T* va = S + (size_t)a * h;
        const T* vb = S + (size_t)b * h;
        T d = 0;
        for (int i = b + 1 + lane; i < h; i += 32) d += va[i] * vb[i];
        for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
        if (lane == 0) Tm[e] = d + va[b];        // v_a[b] * 1 (v_b's unit entry)
    }
    __syncthreads();
    // T by LAPACK's larft recurrence, one column at a time; rows of a column in parallel
    T* g = red;                                  // reuse: holds G[:i, i] (w <= 32 * ...)
    for (int i = 0; i < w; ++i) {
        T ti = tau[i];
        // x = Tm[:i, :i] @ G[:i, i], with G[:i, i] read before Tm's column i is written
        __syncthreads();
        for (int r = tid; r < i; r += nt) {
            T acc = 0;
            for (int q = r; q < i; ++q) acc += Tm[(size_t)r * w + q] * Tm[(size_t)q * w + i];
            S[r] = -ti * acc;                    // S is free now: scratch
        }
        __syncthreads();
        for (int r = tid; r < i; r += nt) Tm[(size_t)r * w + i] = S[r];
        if (tid == 0) Tm[(size_t)i * w + i] = ti;
        for (int r = i + 1 + tid; r < w; r += nt) Tm[(size_t)r * w + i] = 0;
    }
    (void)g;
}

// extend_basis: the end of qrlab.updates._extend_basis in one block.  Y (m x (p + w),
// strides sr, sc) holds the projected columns, then the projected fallback directions.
// A Householder QR of Y's first w columns gives d_j = |r_jj|; each column with
// d_j <= tol ||y_j|| (it adds no direction that its rounding does not swamp) is replaced
// by its fallback, and the QR taken again; Qy = H_1 ... H_w [I; 0] (m x w, row-major)
// and Ry = Qy^T Y[:, :p] (w x p, row-major).  Shared memory: the panel and Qy (2 m w
// values), then 32 + 2 + 2 w.
// One launch instead of two panel QRs and about twenty array operations around them.
template <typename T>
__device__ void extend_basis(const T* Y, long sr, long sc, int m, int p, int w, T tol,
                             T* Qy, T* Ry, T* d)
{
    extern __shared__ unsigned char smem_raw[];
    T* S = reinterpret_cast<T*>(smem_raw);      // the panel, column-major m x w
    T* Qs = S + (size_t)m * w;                   // Qy, column-major m x w
    T* red = Qs + (size_t)m * w;
    T* bc = red + 32;
    T* tau = bc + 2;
    T* dd = tau + w;
    int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, warp = tid >> 5;
    int nwarps = nt >> 5;
    for (int idx = tid; idx < m * w; idx += nt) {
        int c = idx / m, i = idx - c * m;
        S[idx] = Y[i * sr + c * sc];
    }
    __syncthreads();
    for (int c = 0; c < w; ++c) {                // ||y_c||, into dd until the QR's d
        T part = 0;
        for (int i = tid; i < m; i += nt) part += S[(size_t)c * m + i] * S[(size_t)c * m + i];
        const T sum = block_sum<T>(part, red);
        if (tid == 0) dd[c] = sqrt(sum);
    }
    householder_columns(S, m, w, tau, red, bc);
    if (tid == 0) {
        // (tau, free until the second QR, marks the columns that give way)
        for (int j = 0; j < w; ++j) {
            const T dj = fabs(S[(size_t)j * m + j]);
            tau[j] = dj <= tol * dd[j] ? T(1) : T(0);
            dd[j] = dj;
        }
    }
    __syncthreads();
    for (int idx = tid; idx < m * w; idx += nt) {
        int c = idx / m, i = idx - c * m;
        S[idx] = Y[i * sr + (tau[c] != T(0) ? p + c : c) * sc];
        Qs[idx] = i == c ? T(1) : T(0);
    }
    __syncthreads();
    householder_columns(S, m, w, tau, red, bc);
    // Qs = H_1 ... H_w [I; 0], H_w first; H_j leaves the columns before j (still e_c)
    for (int j = w - 1; j >= 0; --j) {
        const T t = tau[j];
        const T* v = S + (size_t)j * m;          // v_j: 1 at row j, then v[j + 1 ..]
        if (t != T(0)) {
            for (int c = j + warp; c < w; c += nwarps)
                reflect_column(v, Qs + (size_t)c * m, j, m, t);
        }
        __syncthreads();
    }
    for (int idx = tid; idx < m * w; idx += nt) {
        int i = idx / w, c = idx - i * w;
        Qy[idx] = Qs[(size_t)c * m + i];
    }
    for (int e = warp; e < w * p; e += nwarps) {
        int a = e / p, b = e - a * p;
        const T* qa = Qs + (size_t)a * m;
        T s = 0;
        for (int i = lane; i < m; i += 32) s += qa[i] * Y[i * sr + b * sc];
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) Ry[e] = s;
    }
    for (int j = tid; j < w; j += nt) d[j] = dd[j];
}

extern "C" {
__global__ void extend_basis_f32(const float* Y, long sr, long sc, int m, int p, int w,
                                 float tol, float* Qy, float* Ry, float* d)
{ extend_basis<float>(Y, sr, sc, m, p, w, tol, Qy, Ry, d); }
__global__ void extend_basis_f64(const double* Y, long sr, long sc, int m, int p, int w,
                                 double tol, double* Qy, double* Ry, double* d)
{ extend_basis<double>(Y, sr, sc, m, p, w, tol, Qy, Ry, d); }
__global__ void panel_qr_f32(float* P, int h, int w, float* tau, float* Tm)
{ panel_qr<float>(P, h, w, tau, Tm); }
__global__ void panel_qr_f64(double* P, int h, int w, double* tau, double* Tm)
{ panel_qr<double>(P, h, w, tau, Tm); }
}
