// Householder QR of a tall panel (h x w, h much larger than w) by many thread blocks at once.
//
// Such panels come before the Givens sweeps: the rows of Q^T U below R when adding columns
// (9000 x 200 adding 200 columns to 12000 x 3000), the rows of Q to remove in their columns
// past R (6000 x 100).  cuSOLVER's geqrf takes each of the w dependent reflectors in a few
// launches (2.1 ms for 9000 x 200 on an H200), and a panel this tall does not fit the one
// block of panel.cu.  Here each thread block keeps a chunk of rows in shared memory, and
// each reflector j costs two barriers of the grid: every block sums, over its rows below
// row j, the products of column j with each column l >= j (a partial Gram row
// s_l = sum_i a_ij a_il), and the block holding row j stores that row; past the first
// barrier, block b adds up columns l = j + b, j + b + nb, ... of the partial rows (in block
// order: the same bits on every run); past the second, every block reads the sums.  From
// them every block finds the same reflector (seed 002; LAPACK's larfg): alpha = a_jj,
// sigma = s_j, beta = -sign(alpha) sqrt(alpha^2 + sigma), tau = (beta - alpha) / beta,
// v = e_j + x / (alpha - beta); and since v^T a_l = a_jl + s_l / (alpha - beta), it applies
// the reflector to its own rows with no further exchange.  A column with nothing below its
// diagonal gets tau = 0 (H = I).  (Every block reading every block's partial row instead
// took 28 us a reflector at 9000 x 200: 132 blocks reading the same lines of L2.  Tried
// again on an H200 with few blocks, 13 to 94 of 64 to 300 rows, the partial rows kept in
// two buffers by the reflector's parity, so one barrier a reflector: 4000 x 80 and
// 4000 x 40 took 0.90 and 0.87 of the time in 32 blocks of 125 rows (float64, 0.456
// against 0.505 ms and 0.242 against 0.279), but 6000 x 100 1.08, 9000 x 200 1.46 and
// 2020 x 500 1.78; whole updates of Tables 2, 3, 10 and 11 (float64; at most 32 blocks of
// 256 rows, the rest as here) 0.99 to 1.08, median 1.00.  So the second barrier is not
// what a reflector's 6 us is made of; not kept.)
//
// P: h x w with strides (ldr, ldc) (either layout).  V: h x w row-major, unit lower
// trapezoidal (the reflectors); Rp: w x w row-major, upper triangular; tau: w.
// work: (gridDim.x + 2 w) w values of scratch (the blocks' partial rows, then the sums and
// row j of each reflector); counts: two ints, zero at launch.  Launched cooperatively
// (every block waits on all the others at each reflector), one block per SM at most, each
// block holding rows = ceil(h / gridDim.x) rows.

#define TALL_NT 512

__device__ __forceinline__ void tall_barrier(int* count, int target)
{
    // every block's stores so far reach every block past it: a block barrier, one
    // thread's release add, its acquire loads until all blocks have added (target)
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.s32 [%0], 1;" :: "l"(count) : "memory");
        flag_wait(count, target);
    }
    __syncthreads();
}

template <typename T>
__device__ void tall_qr(const T* __restrict__ P, long ldr, long ldc, int h, int w, int rows,
                        T* __restrict__ V, T* __restrict__ Rp, T* __restrict__ tau, T* work,
                        int* counts)
{
    extern __shared__ unsigned char smem_raw[];
    const int lds = rows | 1;                   // (odd: the transposing load spreads banks)
    T* S = reinterpret_cast<T*>(smem_raw);       // my rows, column-major: column l at S + l*lds
    T* red = S + (size_t)lds * w;                // TALL_NT: partial sums by group of rows
    T* g = red + TALL_NT;                        // w: reflector j's Gram row
    T* rj = g + w;                               // w: row j
    T* taus = rj + w;                            // w: every reflector's tau
    const int nb = gridDim.x, b = blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
    const int r0 = b * rows, nr = max(0, min(rows, h - r0));   // my rows: r0 .. r0 + nr
    const int lane = tid & 31, warp = tid >> 5, nwarps = nt >> 5;
    T* part = work;                              // nb x w: each block's partial Gram row
    T* gram = part + (size_t)nb * w;             // w x w: row j, reflector j's Gram row
    T* rowj = gram + (size_t)w * w;              // w x w: row j of the panel at step j

    if (ldc == 1) {                              // rows contiguous: walk along them
        for (int e = tid; e < nr * w; e += nt) {
            int i = e / w, l = e - i * w;
            S[(size_t)l * lds + i] = P[(r0 + i) * ldr + l];
        }
    } else {
        for (int e = tid; e < nr * w; e += nt) {
            int l = e / nr, i = e - l * nr;
            S[(size_t)l * lds + i] = P[(r0 + i) * ldr + l * ldc];
        }
    }
    __syncthreads();

    for (int j = 0; j < w; ++j) {
        const int i0 = max(0, j + 1 - r0);       // my rows below row j start here
        const bool owner = j >= r0 && j < r0 + nr;
        const int span = w - j, groups = nt / span;    // columns j .., groups of rows
        const T* cj = S + (size_t)j * lds;
        // my partial Gram row: a thread per column and group of rows (w <= nt: a group at least)
        if (tid < span * groups) {
            const int l = j + tid % span, q = tid / span;
            const T* cl = S + (size_t)l * lds;
            T d = 0;
            for (int i = i0 + q; i < nr; i += groups) d += cj[i] * cl[i];
            red[tid] = d;
        }
        __syncthreads();
        for (int l = tid; l < span; l += nt) {
            T d = 0;
            for (int q = 0; q < groups; ++q) d += red[q * span + l];
            part[(size_t)b * w + j + l] = d;
            if (owner) rowj[(size_t)j * w + j + l] = S[(size_t)(j + l) * lds + (j - r0)];
        }
        // (a block writes its next partial row only past the second barrier, when every
        // block has added up this one)
        tall_barrier(counts, (j + 1) * nb);
        for (int l = j + b + warp * nb; l < w; l += nwarps * nb) {
            T d = 0;
#pragma unroll 4
            for (int q = lane; q < nb; q += 32) d += __ldcg(part + (size_t)q * w + l);
            for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
            if (lane == 0) gram[(size_t)j * w + l] = d;
        }
        tall_barrier(counts + 1, (j + 1) * nb);
        for (int l = j + tid; l < w; l += nt) {
            g[l] = __ldcg(gram + (size_t)j * w + l);
            rj[l] = __ldcg(rowj + (size_t)j * w + l);
        }
        __syncthreads();
        const T alpha = rj[j], sigma = g[j];
        T t = 0, scale = 0, beta = alpha;
        if (sigma != T(0)) {
            T norm = sqrt(alpha * alpha + sigma);
            beta = alpha >= T(0) ? -norm : norm;
            t = (beta - alpha) / beta;
            scale = T(1) / (alpha - beta);
        }
        if (tid == 0) taus[j] = t;
        if (t == T(0)) continue;                 // the same in every block: H = I
        // a_il -= c_l v_i below row j (v_i = scale a_ij), a_jl -= c_l on row j, where
        // c_l = tau v^T a_l; a thread per column past j and group of rows
        if (span > 1) {
            const int cols = span - 1, groups2 = nt / cols;
            if (tid < cols * groups2) {
                const int l = j + 1 + tid % cols, q = tid / cols;
                T* cl = S + (size_t)l * lds;
                const T c = t * (rj[l] + scale * g[l]), cs = c * scale;
                for (int i = i0 + q; i < nr; i += groups2) cl[i] -= cs * cj[i];
                if (owner && q == 0) cl[j - r0] -= c;
            }
        }
        __syncthreads();
        // column j becomes v (the next reflector reads only columns past j)
        for (int i = i0 + tid; i < nr; i += nt) S[(size_t)j * lds + i] *= scale;
        if (owner && tid == 0) S[(size_t)j * lds + (j - r0)] = beta;
    }
    __syncthreads();
    for (int e = tid; e < nr * w; e += nt) {
        int i = e / w, l = e - i * w, gi = r0 + i;
        T x = S[(size_t)l * lds + i];
        V[(size_t)gi * w + l] = gi > l ? x : gi == l ? T(1) : T(0);
        if (gi < w) Rp[(size_t)gi * w + l] = l >= gi ? x : T(0);
    }
    if (b == 0)
        for (int l = tid; l < w; l += nt) tau[l] = taus[l];
}

extern "C" {
__global__ void __launch_bounds__(TALL_NT)
tall_qr_f32(const float* P, long ldr, long ldc, int h, int w, int rows, float* V, float* Rp,
            float* tau, float* work, int* counts)
{ tall_qr<float>(P, ldr, ldc, h, w, rows, V, Rp, tau, work, counts); }
__global__ void __launch_bounds__(TALL_NT)
tall_qr_f64(const double* P, long ldr, long ldc, int h, int w, int rows, double* V, double* Rp,
            double* tau, double* work, int* counts)
{ tall_qr<double>(P, ldr, ldc, h, w, rows, V, Rp, tau, work, counts); }
}
