// Givens sweeps for qrlab (float and double): the rotations of each group of waves
// multiplied into one small orthogonal matrix.
//
// The papers launch two kernels per wave of rotations (makeGivens, applyGivens), so an
// update costs O(m) launches.  Here one launch (strips.cu; one per 256 sweeps) computes
// every rotation of a block of pipelined sweeps, and a second (below) multiplies the
// rotations of each group of waves into a small orthogonal matrix, which is then applied
// to R and Q by matrix products.
//
// Sweep s zeroes driver line s bottom-up; at wave t it rotates rows (i-1, i) with
// i = B - t + 2 s, when tops[s] < i < bottoms[s].  C, S: nwaves x p, as strips.cu leaves
// them (the slots of rotations that run; the others are never read here).

// Multiply the rotations of wave group g into G[g] (w x w, row-major), starting from I.
// grid = (groups g0 .., ceil(w / 32)), 512 threads: a block owns 32 columns of G[g], one lane
// per column, and a warp takes a rotation of a wave (their row pairs are disjoint, so
// four go out together).  The columns stay in shared memory (w x 32 values) when
// in_smem, else they are updated in G, which must then hold I.  The rotations come in
// chunks of `chunk` waves, copied into shared memory by all threads at once (behind the
// columns, if those are there): a wave's (c, s) loaded from device memory as the
// rotations needed them cost one round trip to L2 each time, 1.2 ms a group of 256
// waves of 200 rotations (H100).
#define ACC_NT 512
template <typename T>
__device__ void accumulate_groups(T* G, int w, const T* C, const T* S, int p,
                                  const int* tops, const int* bottoms, int B, int nwaves,
                                  int waves_per_group, const int* lo, int in_smem, int g0,
                                  int chunk)
{
    constexpr int U = 4;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int g = g0 + blockIdx.x, c0 = blockIdx.y * 32, lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5, nw = ACC_NT / 32, col = c0 + lane;
    T* Gg = G + (size_t)g * w * w;
    T* X = in_smem ? reinterpret_cast<T*>(smem_raw) : Gg + c0;   // the block's columns
    T* cs = reinterpret_cast<T*>(smem_raw) + (in_smem ? (size_t)w * 32 : 0);  // chunk x p x 2
    // the sweeps' row ranges, behind the chunk: read for every rotation of every wave,
    // so from shared memory rather than through L1 (adding 200 columns at the front of a
    // 12000 x 3000 factorization: 13.5 -> 12.7 ms, H100, float32)
    int* top = reinterpret_cast<int*>(cs + (size_t)chunk * p * 2);
    int* bottom = top + p;
    for (int s = threadIdx.x; s < p; s += ACC_NT) {
        top[s] = tops[s];
        bottom[s] = bottoms[s];
    }
    const size_t ld = in_smem ? 32 : w;
    const bool mine = col < w;
    if (in_smem)
        for (int r = warp; r < w; r += nw) X[r * 32 + lane] = r == col ? T(1) : T(0);
    const int t0 = g * waves_per_group, t1 = min(nwaves, t0 + waves_per_group), l0 = lo[g];
    for (int tc = t0; tc < t1; tc += chunk) {
        const int nt = min(chunk, t1 - tc);
        __syncthreads();                              // the chunk before is done with cs
        for (int e = threadIdx.x; e < nt * p; e += ACC_NT) {   // (written by another
            cs[2 * e] = __ldcg(C + (size_t)tc * p + e);           // kernel, perhaps still
            cs[2 * e + 1] = __ldcg(S + (size_t)tc * p + e);       // running: through L2)
        }
        __syncthreads();
        for (int t = tc; t < tc + nt; ++t) {
            const T* csw = cs + 2 * (size_t)(t - tc) * p;
            for (int s0 = warp; s0 < p; s0 += nw * U) {
                T xa[U], xb[U], c[U], sn[U];
                bool on[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int s = s0 + u * nw, i = B - t + 2 * s;
                    on[u] = s < p && i > top[s] && i < bottom[s];
                    if (on[u]) {
                        c[u] = csw[2 * s];
                        sn[u] = csw[2 * s + 1];
                        if (mine) {
                            xa[u] = X[(i - 1 - l0) * ld + lane];
                            xb[u] = X[(i - l0) * ld + lane];
                        }
                    }
                }
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int i = B - t + 2 * (s0 + u * nw);
                    if (on[u] && mine) {
                        X[(i - 1 - l0) * ld + lane] = c[u] * xa[u] + sn[u] * xb[u];
                        X[(i - l0) * ld + lane] = c[u] * xb[u] - sn[u] * xa[u];
                    }
                }
            }
            __syncthreads();
        }
    }
    if (in_smem && mine)
        for (int r = warp; r < w; r += nw) Gg[(size_t)r * w + col] = X[r * 32 + lane];
}

// Wait until *progress >= need (the rotation kernel, running on another stream, counts
// its finished waves there), so that the kernels queued after this one may read them.
extern "C" __global__ void wait_for_waves(const int* progress, int need)
{
    if (threadIdx.x == 0) {
        while (*(volatile const int*)progress < need) __nanosleep(256);
        __threadfence();
    }
}

extern "C" {
__global__ void __launch_bounds__(ACC_NT)
accumulate_groups_f32(float* G, int w, const float* C, const float* S, int p,
                      const int* tops, const int* bottoms, int B, int nwaves, int wpg,
                      const int* lo, int in_smem, int g0, int chunk)
{ accumulate_groups<float>(G, w, C, S, p, tops, bottoms, B, nwaves, wpg, lo, in_smem, g0,
                           chunk); }
__global__ void __launch_bounds__(ACC_NT)
accumulate_groups_f64(double* G, int w, const double* C, const double* S, int p,
                      const int* tops, const int* bottoms, int B, int nwaves, int wpg,
                      const int* lo, int in_smem, int g0, int chunk)
{ accumulate_groups<double>(G, w, C, S, p, tops, bottoms, B, nwaves, wpg, lo, in_smem, g0,
                            chunk); }
}
