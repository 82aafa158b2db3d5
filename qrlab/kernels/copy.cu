// The working copy of a factor, in one pass over memory (any element type).
//
// An update never writes the caller's arrays, so it starts from a copy, and the copy is
// often the update's largest memory traffic: 1.15 GB for the Q of 12000 rows in float32.
// CuPy's copy of a column-major array (what cupy.linalg.qr returns) into row-major order
// reads with a stride and ran at about 1 TB/s on an H100; a gather of rows (Q[order])
// about the same.  Here a block moves a 32 x 32 tile through shared memory, so that both
// its reads and its writes are coalesced whichever way the source is laid out.
//
// out (m x n, row-major) gets the rows of A in the order k .. k + p - 1, 0 .. k - 1,
// k + p .. m - 1 (p = 0: as they are; removing rows k .. k + p moves them to the top),
// each row i times scale[i] where scale is given (real types only), and zeros below the
// diagonal where upper is set (those entries of A are not read).  A's element (i, j) is
// at A[i sr + j sc].  Only rows r0 .. m - 1 of out are written (a copy made in parts, on
// two streams); launch with (ceil(n / 32), ceil((m - r0) / 32)) blocks of 32 x 8 threads.

template <typename T>
__device__ __forceinline__ T copy_scaled(T v, const T* scale, int i)
{
    return scale ? v * scale[i] : v;
}
// byte-moving unit types (complex values) are never scaled
__device__ __forceinline__ int2 copy_scaled(int2 v, const int2*, int) { return v; }
__device__ __forceinline__ int4 copy_scaled(int4 v, const int4*, int) { return v; }

template <typename T>
__device__ void copy_rows(const T* A, long sr, long sc, T* out, int m, int n, int k, int p,
                          const T* scale, int upper, int r0)
{
    __shared__ T tile[32][33];                       // (33: no bank conflicts down a column)
    const int j0 = blockIdx.x * 32, i0 = r0 + blockIdx.y * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const bool by_col = sr < sc;                     // column-major source: lanes go down it
    if (upper && j0 + 31 < i0) {                     // a tile wholly below the diagonal
        for (int y = ty; y < 32; y += 8)
            if (i0 + y < m && j0 + tx < n) out[(long)(i0 + y) * n + j0 + tx] = T{};
        return;
    }
    for (int y = ty; y < 32; y += 8) {
        const int r = by_col ? tx : y, c = by_col ? y : tx;   // this thread's tile entry
        const int i = i0 + r, j = j0 + c;
        if (i < m && j < n && !(upper && j < i)) {
            const int src = i < p ? k + i : i < k + p ? i - p : i;
            tile[r][c] = copy_scaled(A[(long)src * sr + (long)j * sc], scale, i);
        } else {
            tile[r][c] = T{};
        }
    }
    __syncthreads();
    for (int y = ty; y < 32; y += 8)
        if (i0 + y < m && j0 + tx < n) out[(long)(i0 + y) * n + j0 + tx] = tile[y][tx];
}

extern "C" {
__global__ void copy_rows_f32(const float* A, long sr, long sc, float* out, int m, int n,
                              int k, int p, const float* scale, int upper, int r0)
{ copy_rows<float>(A, sr, sc, out, m, n, k, p, scale, upper, r0); }
__global__ void copy_rows_f64(const double* A, long sr, long sc, double* out, int m, int n,
                              int k, int p, const double* scale, int upper, int r0)
{ copy_rows<double>(A, sr, sc, out, m, n, k, p, scale, upper, r0); }
__global__ void copy_rows_b8(const int2* A, long sr, long sc, int2* out, int m, int n, int k,
                             int p, const int2* scale, int upper, int r0)
{ copy_rows<int2>(A, sr, sc, out, m, n, k, p, nullptr, upper, r0); }
__global__ void copy_rows_b16(const int4* A, long sr, long sc, int4* out, int m, int n,
                              int k, int p, const int4* scale, int upper, int r0)
{ copy_rows<int4>(A, sr, sc, out, m, n, k, p, nullptr, upper, r0); }
}
