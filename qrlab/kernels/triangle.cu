// The whole triangle update [R; B] -> [R'; 0] in one launch (float, double).
//
// R is n x ncols (ncols >= n), upper triangular, B is k x ncols; J = diag(1 on R's rows,
// sgn on B's rows).  Columns past n (a right-hand side, say) are carried along.  The
// update is a chain of n reflectors u_j = [e_j; v_j] (v_j on B's rows only, because R is
// triangular), taken in panels of 32: panel P reduces columns 32P .. 32P + 32, and its
// reflectors touch only R's rows of that panel and B.  One kernel launch per panel
// (reflect.cu) puts a launch, a load and a block-wide factorization on the critical path
// of every panel.  Here one block per SM runs the whole chain, without grid barriers.
//
// Chunks.  A panel's factor is a chain of 32 steps, each a reduction over B's k rows:
// 47 us a panel at k = 500 against 17.5 at k = 64 (float).  So B's rows go in nc chunks
// of at most kb rows, and [R; B] is reduced chunk after chunk, [R; B_0] -> [R^(1); 0],
// then [R^(1); B_1] -> [R^(2); 0] ...  Chunk c's panel J needs only chunk c's panel
// J - 1 and chunk c - 1's panel J, so the chunks run pipelined, chunk c + 1 one panel
// behind chunk c: the critical path is np + nc panel steps of kb rows instead of np
// steps of k (gpu._triangle_chunks picks nc; more chunks mean more work items).
//
//   A unit is chunk c's rows of tile t (columns 32t .. 32t + 32); unit u = c nt + t
//   belongs to block u mod gridDim.  Its items: for J < min(t, np), apply chunk c's
//   panel J to it; then, for t < np, factor it as chunk c's panel t (its B columns are
//   still in shared memory) and publish that (published[c np + t]).  R's rows of panel
//   J in tile t pass from chunk to chunk: chunk c waits until handed[J nt + t] says
//   chunk c - 1 has written them (for t = J: panel J's diagonal block, after its
//   factor), and says so for chunk c + 1 when it has.
//
//   Every item waits only on items of a smaller diagonal d = c + J (a factor of panel
//   t counts as d = c + t - 1), so each block runs its items in order of d, and in one
//   d its factors first (they are the critical path), then its other units chunk by
//   chunk, so that a panel's V_B and L^T are loaded once for all of its tiles.  With
//   every block resident, none waits for ever.
//
// Signs.  A reflector's beta has the sign opposite to alpha's (no cancellation), and a
// later chunk's alpha is the earlier chunk's beta, so every chunk flips the diagonal:
// with an even number of chunks, chunk 0 reads R negated, so that the result has the
// signs of one chain of reflectors over all of B.  For that, a later chunk also builds
// a reflector where its column below the pivot is zero (a flip; positive = 2 below),
// and so does every chunk with positive = 1.  The rows differ in sign from one chain's
// only where chunk 0's column below a pivot is zero and a later chunk's is not.
//
// Compact WY with the triangular structure: H_{w-1} .. H_0 X = X - U Z with
//     Z = L (U^T J X) = L (X_R + sgn V_B^T X_B),   L = (D^{-1} + N)^{-1},
// D = diag(tau), N strictly lower with N[i][q] = u_q^T J u_i = sgn v_q . v_i, and
// X -= U Z is X_R -= Z, X_B -= V_B Z.  Only V_B (kb x 32) and L are kept, so that a
// chunk of up to 512 rows (256 in double) fits in shared memory beside a tile.
//
// The panel factorization (tri_factor_columns): lane c holds column c of B in registers,
// RPW rows per warp (tri_rpw: 4, 16 or 32; 16 for double), so one to sixteen warps.
// Step j: column j reaches the other lanes (by shuffles for 4 rows, else through shared
// memory), every lane dots its column with it (the warps' partial dots summed through
// shared memory behind one named barrier; with one warp, sigma comes from lane j's own
// ||b_j||^2, kept up to date), and every lane c > j applies H_j to its column.  With one
// warp a step is a single chain of dependent instructions (about 170 ns): it has no
// branches, and the warp after the factor's builds L from each step's couplings while
// the steps go on.  The pivot uses alpha = R[j][j] (R's diagonal block is untouched
// until its own panel) and sigma = sgn ||b_j||^2.  With positive = 1 a reflector is
// built even where b_j = 0, so that beta = -sign(alpha) ||x||_J is positive for the
// negative alpha the caller passes (2: where alpha != 0).  A pivot alpha^2 + sigma that
// is not positive
// (possible only for sgn < 0) or not finite is a breakdown: its column goes to *fail
// (atomicMin) and that reflector is skipped.
//
// Layout: R (leading dimension ldr) and B (ldb) row-major.  work: one slot of
// (kb + 32) x 32 values per chunk and panel (V_B, L^T).  published: nc x np ints, and
// handed: np x nt ints, zero.  trace: null, or 8 values per chunk and panel from the
// block that factors it: 5 time stamps (ns; rows handed, loaded and published, tile
// updated, factored, published).  Measured on an H100 (float), per panel on the
// critical path of one chunk: 8.5 us for k = 1, 17.5 for k = 64, 47 for k = 500; the
// whole update at n = 2500, k = 500 went from 3.85 ms (one chunk) to 2.19 (six).  At
// n = 3000, k = 500 (000 Table 8) with four chunks of 125 rows, a panel step of the first
// chunk takes 20.8 us: 5.2 loading (the tile, then V_B and L^T from L2), 5.2 updating the
// tile, 13.8 factoring (four warps, a barrier per column); with sixteen chunks of 32 rows
// the factor takes 9.5 us (one warp) but the blocks are busy with the four times as many
// tile updates, each about 6 us of fixed cost, and a step waits 26 us for its block.
// How much those updates cost the launch (H100, variants timed for that alone, wrong
// values): where the items that only apply a panel do nothing but hand their flag on, the
// model's count of chunks takes 0 to 16 percent less time (n = 2500 to 7000, k = 200 and
// 500, both dtypes), and the best count then (5 to 16 chunks) 5 to 43 percent less than
// the model's does now: their cost, not the chain alone, keeps the chunks few.  Of it,
// the loads and stores of B's columns are 1 to 4 percent of the launch; the rest is
// latency (the wait for the chunk before, the tile's load, three barriers, the hand-off),
// which overlapping one item's loads with the item before's products would hide.  The
// arithmetic of those updates (V_B^T X_B and X_B -= V_B Z) is 6 to 31 percent of the
// launch: without it, at the model's count, n x k = 2900 x 100 took 6 percent less time,
// 2500 x 500 15 to 16, 3000 x 1500 25 and 7000 x 1500 30 to 31 (both dtypes).  X_B -=
// V_B Z on the tensor cores in double (DMMA m8n8k4: Z's entries in registers, V_B's rows
// by vector loads in a permuted order of the sum, B written back through X) did not pay:
// from 0.7 percent faster to 3.6 percent slower at 2500 to 7000 x 256 to 1500, 1 to 12
// percent slower with all 32 columns of Z in registers (the kernel's spills at 512
// threads grew from 96 to 144 and 160 bytes a thread).  Nor did loading an item's rows of
// B while the block works on the item before (cp.async into a second tile; the block's
// next item found before this one's work): against this kernel 0.6 to 10 percent slower
// at n x k = 1000 to 7000 x 100 to 2000, both dtypes, and against the same loop with one
// tile 0 to 4 (the same results bit for bit).  Of a panel step's loads on the critical
// path, about 0.6 us come after the panel before is published (2900 x 100, float).  (A
// search for the next item before an item's work must stop at the block's last diagonal:
// scanning every diagonal left after a block's last item added up to 14 us to a step.)
// Launch with 512 threads, the dynamic shared memory of gpu._triangle_smem(kb), one
// block per SM at most and all blocks resident (a cooperative launch): blocks wait for
// each other.

#define TRI_W 32
#define TRI_NT 512

__device__ __forceinline__ long long tri_now()
{
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <typename T>
__device__ void tri_load(T* X, T sr, const T* R, long ldr, const T* B, long ldb, int ncols,
                         int k, int kpad, int row0, int wJ, int t)
{
    // Tile t into X: R's rows row0 .. row0 + wJ (panel J's, times sr; zeros below), then
    // B's k rows, then zeros up to kpad rows of B (the factor's padding).  Eight loads in
    // flight per thread: with a few hundred rows, one at a time would wait on memory
    // latency once per row.
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nw = TRI_NT / 32;
    const int col = t * TRI_W + lane, rows = TRI_W + kpad;
    const bool active = col < ncols;
    for (int r0 = warp; r0 < rows; r0 += 8 * nw) {
        T x[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int r = r0 + u * nw;
            x[u] = 0;
            if (active && r < wJ) x[u] = sr * R[(long)(row0 + r) * ldr + col];
            else if (active && r >= TRI_W && r < TRI_W + k)
                x[u] = B[(long)(r - TRI_W) * ldb + col];
        }
#pragma unroll
        for (int u = 0; u < 8; ++u)
            if (r0 + u * nw < rows) X[(r0 + u * nw) * TRI_W + lane] = x[u];
    }
}

template <typename T>
__device__ void tri_copy_in(T* dst, const T* src, long count)
{
    // count values (a multiple of 4, both ends 16-byte aligned) from L2 (another SM wrote
    // them) into shared memory, 16-byte loads, four in flight per thread
    const long nv = count * sizeof(T) / 16;
    const int4* s = reinterpret_cast<const int4*>(src);
    int4* d = reinterpret_cast<int4*>(dst);
    for (long i = threadIdx.x; i < nv; i += 4 * TRI_NT) {
        int4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (i + u * TRI_NT < nv) v[u] = __ldcg(s + i + u * TRI_NT);
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (i + u * TRI_NT < nv) d[i + u * TRI_NT] = v[u];
    }
}

template <typename T>
__device__ __noinline__ void tri_apply(const T* Vb, const T* Lt, T* X, T* Y, T* Z, T sgn,
                          T* R, long ldr, T* B, long ldb, int ncols, int k,
                          int row0, int wJ, int t, bool keep)
{
    // Panel J (its R rows row0 .. row0 + wJ) applied to tile t, loaded in X by tri_load
    // (a barrier ago): lane = column; each thread computes four rows, so that one
    // (broadcast, vector) load of coefficients serves four multiply-adds.  keep: leave
    // the new B columns in X (for the factor) instead of writing them back.  Y: 2 x 32 x
    // 32 values of scratch.
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int col = t * TRI_W + lane;
    const bool active = col < ncols;
    const T* XB = X + TRI_W * TRI_W;
    {                                         // V_B^T X_B: rows i0 .. i0 + 4, the two
        const int half = warp / (TRI_NT / 64);    // halves of B's rows in parallel
        const int i0 = 4 * (warp % (TRI_NT / 64)), kh = (k + 1) / 2;
        T y[4] = {0, 0, 0, 0};
        if (i0 < wJ) {                        // (columns of V_B past wJ are zero)
            const int r1 = half ? k : kh;
#pragma unroll 4
            for (int r = half ? kh : 0; r < r1; ++r) {
                T v[4];
                lds4(Vb + r * TRI_W + i0, v);
                const T xr = XB[r * TRI_W + lane];
#pragma unroll
                for (int a = 0; a < 4; ++a) y[a] += v[a] * xr;
            }
        }
#pragma unroll
        for (int a = 0; a < 4; ++a) Y[half * TRI_W * TRI_W + (i0 + a) * TRI_W + lane] = y[a];
    }
    __syncthreads();
    if (warp < TRI_W / 4) {                   // Z = L (X_R + sgn V_B^T X_B), rows i0 .. i0 + 4
        const int i0 = 4 * warp;
        T z[4] = {0, 0, 0, 0};
        if (i0 < wJ) {                        // (rows of L past wJ are zero)
#pragma unroll 8
            for (int q = 0; q < TRI_W; ++q) { // L[i][q] = 0 for q > i
                T l[4];
                lds4(Lt + q * TRI_W + i0, l);
                const T yq = X[q * TRI_W + lane]
                             + sgn * (Y[q * TRI_W + lane] + Y[TRI_W * TRI_W + q * TRI_W + lane]);
#pragma unroll
                for (int a = 0; a < 4; ++a) z[a] += l[a] * yq;
            }
        }
#pragma unroll
        for (int a = 0; a < 4; ++a) {
            Z[(i0 + a) * TRI_W + lane] = z[a];
            if (active && i0 + a < wJ)        // panel J's rows of R (this chunk's)
                R[(long)(row0 + i0 + a) * ldr + col] = X[(i0 + a) * TRI_W + lane] - z[a];
        }
    }
    __syncthreads();
    T zc[TRI_W];                              // X_B -= V_B Z: the lane's column of Z in
#pragma unroll                                // registers, four rows at a time
    for (int i = 0; i < TRI_W; ++i) zc[i] = Z[i * TRI_W + lane];
    for (int r0 = 4 * warp; r0 < k; r0 += 4 * (TRI_NT / 32)) {
        T s[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < TRI_W; i += 4) {
#pragma unroll
            for (int a = 0; a < 4; ++a) {     // (rows past k read L^T: finite, not written)
                T v[4];
                lds4(Vb + (r0 + a) * TRI_W + i, v);
                s[a] += (v[0] * zc[i] + v[1] * zc[i + 1]) + (v[2] * zc[i + 2] + v[3] * zc[i + 3]);
            }
        }
#pragma unroll
        for (int a = 0; a < 4; ++a) {
            const int r = r0 + a;
            if (r < k) {
                const T v = XB[r * TRI_W + lane] - s[a];
                if (keep) X[(TRI_W + r) * TRI_W + lane] = v;
                else if (active) B[(long)r * ldb + col] = v;
            }
        }
    }
    __syncthreads();                          // X and Z are reused by the next tile
}

// 1 / sqrt(x) and 1 / x to about an ulp, without the IEEE slow paths: the reflector
// chain waits on them once per column (t and scale stay consistent to a few ulps, like
// LAPACK's own rounding).  In double, float's approximation taken to an ulp by one step
// of third order (four dependent operations) made the update 3 to 7 percent slower on an
// H100 (Tables 6 and 8; in strips.cu's rotations, within 2 percent): these are not what
// the chain waits on.  Nor did taking them off the chain pay (H200): ||b_j||^2 predicted
// a step ahead by every lane from the step's own sums (||b_c - f b_j||^2 = ||b_c||^2 +
// f (f ||b_j||^2 - 2 b_j . b_c), from one reduction of the norms before the steps), the
// reciprocals of the predicted pivot computed without branches (rsqrt.approx and
// rcp.approx, one refining step) while the dots reduce, and moved to the exact pivot
// after the barrier by one multiply-add each (first order: (dp / p0)^2 under an ulp;
// the exact path where the prediction is further off, which no step of the random
// inputs timed needed).  The factor took 27.8 us a panel against 23.5 (double, n = 3000,
// k = 500, 4 chunks) and 13.2 against 7.8 (float, 1000 x 200, 7 chunks of one warp, whose
// prediction is exact and whose loop was rearranged alike), the updates of Tables 6 to 9
// 1.05 to 1.25 times as long.  The compiler put the predicted reciprocals just after the
// barrier, ahead of the partial sums; forced before it (a store of their result), the
// factor took 29.2 us.  By a count of the step's double instructions (about 75 a warp,
// two warps to a sub-partition at eight factor warps), the FP64 pipe alone is busy for
// about a fifth of a step: work added to every step costs time even where it is off the
// chain
__device__ __forceinline__ float tri_rsqrt(float x)
{
    const float r = rsqrtf(x);
    return r * fmaf(-0.5f * x * r, r, 1.5f);
}
__device__ __forceinline__ double tri_rsqrt(double x) { return rsqrt(x); }
__device__ __forceinline__ float tri_rcp(float x)
{
    const float r = __fdividef(1.0f, x);
    return r * fmaf(-x, r, 2.0f);
}
__device__ __forceinline__ double tri_rcp(double x) { return __drcp_rn(x); }

// the warps' partial dots, transposed: lane c's column of partials has a stride of 20
// floats (18 doubles), so that each lane reads its own in 16-byte loads without bank
// conflicts
#define TRI_PS(T) (sizeof(T) == 4 ? 20 : 18)

__device__ __forceinline__ void tri_count_step(volatile int* done, int steps)
{
    // (the factor's warp 0, after its stores of the steps) a release by lane 0: the warp
    // building L reads Gt and tau after seeing the count
    __syncwarp();
    if ((threadIdx.x & 31) == 0)
        asm volatile("st.release.cta.shared.s32 [%0], %1;"
                     :: "r"((unsigned)__cvta_generic_to_shared((void*)done)), "r"(steps)
                     : "memory");
}

__device__ __forceinline__ int tri_steps_seen(volatile int* done)
{
    int v;
    asm volatile("ld.acquire.cta.shared.s32 %0, [%1];"
                 : "=r"(v) : "r"((unsigned)__cvta_generic_to_shared((void*)done)) : "memory");
    return v;
}

template <typename T>
__device__ void tri_build_l(const T* Gt, const T* tau, int wp, T* Lout, volatile int* done)
{
    // L = (D^{-1} + N)^{-1}: lane b solves for column b, L[i][b] = tau_i (delta_ib -
    // sum_{b <= q < i} G[q][i] L[q][b]), and writes it as row b of L^T (Lout).  Row i
    // needs the factor's step i (Gt's row i, tau_i): with done, it waits for the factor
    // warp 0 to count that step, so that L is ready when the factor ends.
    const int b = threadIdx.x & 31;
    T lc[TRI_W];
#pragma unroll
    for (int i = 0; i < TRI_W; ++i) {
        lc[i] = 0;
        if (i < wp) {
            if (done)
                while (tri_steps_seen(done) <= i) {}
            T s[4] = {i == b ? T(1) : T(0), 0, 0, 0};
#pragma unroll
            for (int q0 = 0; q0 < i; q0 += 4) {
                T g[4];
                lds4(Gt + i * TRI_W + q0, g);
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    if (q0 + u < i) s[u] -= g[u] * lc[q0 + u];
            }
            lc[i] = i < b ? T(0) : tau[i] * ((s[0] + s[1]) + (s[2] + s[3]));
        }
    }
#pragma unroll
    for (int i = 0; i < TRI_W; i += 4) st4(Lout + b * TRI_W + i, lc + i);
}

template <typename T, int RPW, bool ONE>
__device__ void tri_factor_columns(const T* S, T* D, T* Gt, T* pd, T* cbuf, T* tau, int k,
                                   int wp, int wt, T sgn, int positive, int* first_fail,
                                   T* Bc, long ldb, T* Vout, T* Lout, volatile int* done)
{
    // The reflectors of the panel: lane c holds RPW rows of column c in registers, in
    // warp (row / RPW) (ONE: a single warp, k <= RPW); S has the rows up to a multiple of
    // RPW (zeros below k), so the loops are unrolled without conditions.  Column j
    // reaches the other lanes by shuffles (RPW = 4) or, for more rows, through the
    // warp's two slots of cbuf (a store by lane j, then broadcast loads: fewer
    // instructions than RPW shuffles).  Lanes c < j hold their final columns, so the
    // same dots give the coupling Gt[j][c] = G[c][j] = sgn v_c . v_j for the compact WY
    // form.  With one warp, each lane keeps ||x_c||^2 up to date after its update, so
    // that the pivot of the next step does not wait for the dots.  A step is one chain
    // (shuffle, scalars, update) that a single warp runs alone, so it has no branches
    // and no more instructions than it needs: its stores are one predicated store, a
    // breakdown is kept in a register.  The warp after the factor's (done != null)
    // builds L alongside; the vectors v_c go to Vout straight from the registers.
    const int tid = threadIdx.x, c = tid & 31, warp = tid >> 5;
    const unsigned full = 0xffffffffu;
    const int nw = ONE ? 1 : (k + RPW - 1) / RPW, nw4 = (nw + 3) & ~3;
    constexpr int PS = TRI_PS(T);
    if (warp == nw && done) {
        tri_build_l(Gt, tau, wp, Lout, done);
        return;
    }
    if (warp >= nw) return;
    const T* Sr = S + RPW * warp * TRI_W;
    T* cb = cbuf + 2 * RPW * warp;
    T x[RPW];
#pragma unroll
    for (int i = 0; i < RPW; ++i) x[i] = Sr[i * TRI_W + c];
    if (!ONE && warp == 0)                    // the partials' padding to a multiple of 4
        for (int f = nw; f < nw4; ++f) pd[c * PS + f] = pd[TRI_W * PS + c * PS + f] = 0;
    auto sumsq = [&]() {
        T q[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < RPW; ++i) q[i % 4] += x[i] * x[i];
        return (q[0] + q[1]) + (q[2] + q[3]);
    };
    T my_sig = ONE ? sumsq() : T(0);
    const T my_alpha = D[c * TRI_W + c];      // R's diagonal: fixed until its own step
    T my_scale = 0, my_beta = 0;
    T a_next = D[c];                          // row j of D, one step ahead
    int fail_j = 0x7fffffff;
    const int gt_at = Gt - D, tau_at = tau - D;
    for (int j = 0; j < wp; ++j) {
        if (done && warp == 0 && j)           // step j - 1 counted for the warp building
            tri_count_step(done, j);          // L (a step late: its stores are done)
        const T a_c = a_next;                 // row j + 1 changes only at step j + 1
        a_next = D[min(j + 1, TRI_W - 1) * TRI_W + c];
        const T alpha = __shfl_sync(full, my_alpha, j);
        T sig = ONE ? __shfl_sync(full, my_sig, j) : T(0);
        T xj[RPW], d[4] = {0, 0, 0, 0};
        // column j's slot (two: lanes still reading step j - 1's column leave the other
        // one alone)
        T* slot = cb + (j & 1) * RPW;
        if constexpr (RPW >= 16) {
            if (c == j)
#pragma unroll
                for (int i = 0; i < RPW; i += 4) st4(slot + i, x + i);
            __syncwarp();
#pragma unroll
            for (int i = 0; i < RPW; i += 4) lds4(slot + i, xj + i);
        } else {
#pragma unroll
            for (int i = 0; i < RPW; ++i) xj[i] = __shfl_sync(full, x[i], j);
        }
#pragma unroll
        for (int i = 0; i < RPW; ++i) d[i % 4] += xj[i] * x[i];
        T dot = (d[0] + d[1]) + (d[2] + d[3]);
        if constexpr (!ONE) {                 // every warp sums the partials in one order
            T* buf = pd + (j & 1) * TRI_W * PS;   // two buffers: one barrier per step
            buf[c * PS + warp] = dot;
            // (a memory clobber: column j is read again from its slot after the barrier,
            // so that its registers are free for the partials)
            asm volatile("bar.sync 1, %0;" :: "r"(nw * 32) : "memory");
            // every partial loaded before any is added, so that they wait on shared
            // memory once, then summed by a tree
            T a[8], g[8];
#pragma unroll
            for (int f = 0; f < 8; f += 4) {
                if (f < nw4) {
                    lds4(buf + c * PS + f, a + f);
                    lds4(buf + j * PS + f, g + f);
                } else {
#pragma unroll
                    for (int u = 0; u < 4; ++u) a[f + u] = g[f + u] = 0;
                }
            }
#pragma unroll
            for (int f = 8; f < TRI_NT / 32; f += 4) {    // more than eight warps
                if (f < nw4) {
                    T a2[4], g2[4];
                    lds4(buf + c * PS + f, a2);
                    lds4(buf + j * PS + f, g2);
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        a[f % 8 + u] += a2[u];
                        g[f % 8 + u] += g2[u];
                    }
                }
            }
            dot = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
            sig = ((g[0] + g[1]) + (g[2] + g[3])) + ((g[4] + g[5]) + (g[6] + g[7]));
            if constexpr (RPW >= 16)
#pragma unroll
                for (int i = 0; i < RPW; i += 4) lds4(slot + i, xj + i);
        }
        // beta = -sign(alpha) ||[alpha; b_j]||_J, t = (beta - alpha) / beta, scale =
        // 1 / (alpha - beta): no cancellation in either (alpha and beta differ in sign)
        const T sigma = sgn * sig;
        const T pivot = alpha * alpha + sigma;
        const bool ok = pivot > T(0) && isfinite(pivot);
        // build: positive 1 everywhere, 2 (a later chunk) wherever alpha != 0, 0 where
        // there is something below the pivot
        const bool wanted = sigma != T(0) || positive == 1 || (positive == 2 && alpha != T(0));
        const bool build = ok && wanted;
        const T r = tri_rsqrt(ok ? pivot : T(1));
        const bool flip = alpha >= T(0);
        const T beta = build ? (flip ? -pivot * r : pivot * r) : alpha;
        const T t = build ? fma(-alpha, flip ? -r : r, T(1)) : T(0);
        const T scale = build ? tri_rcp(alpha - beta) : T(0);
        fail_j = !ok && wanted ? min(fail_j, j) : fail_j;   // a breakdown: skipped
        // u_j^T J x_c = R[j][c] + sgn scale (b_j . b_c);  x_c -= t (u_j^T J x_c) u_j, and
        // on B's rows t scale = -1 / beta = +-r, one product less on the chain
        const bool later = c > j && c < wt;
        const T uj = fma(scale, sgn * dot, a_c);
        const T dc = t * uj;
        const T f = later && build ? (flip ? r : -r) * uj : T(0);
#pragma unroll
        for (int i = 0; i < RPW; ++i) x[i] = fma(-f, xj[i], x[i]);
        if (ONE) my_sig = sumsq();
        if (ONE || warp == 0) {               // row j of D, row j of Gt, or tau_j: one
            const int at = later ? j * TRI_W + c  // store (offsets from D, no branches)
                                 : c < j ? gt_at + j * TRI_W + c : tau_at + j;
            const T val = later ? a_c - dc : c < j ? sgn * my_scale * scale * dot : t;
            if (later || c <= j) D[at] = val;
        }
        my_scale = c == j ? scale : my_scale;
        my_beta = c == j ? beta : my_beta;
    }
    if (done && warp == 0) tri_count_step(done, wp);
    if (tid == 0 && fail_j != 0x7fffffff) *first_fail = fail_j;
    if (c >= wp && c < wt)                    // trailing columns in the panel's tile: done
#pragma unroll
        for (int i = 0; i < RPW; ++i)
            if (RPW * warp + i < k) Bc[(long)(RPW * warp + i) * ldb + c] = x[i];
#pragma unroll
    for (int i = 0; i < RPW; ++i)             // the vectors v_c (zero past wp)
        if (RPW * warp + i < k) Vout[(RPW * warp + i) * TRI_W + c] = x[i] * my_scale;
    if (warp == 0) {
        if (c < wp) D[c * TRI_W + c] = my_beta;
        if (!done) {                          // no warp to spare: L after the steps
            __syncwarp();
            tri_build_l(Gt, tau, wp, Lout, nullptr);
        }
    }
}

// rows of B per factoring warp: few for small k (no wasted work), at most 32 registers'
// worth (16 doubles) for large k (gpu._triangle_smem repeats this rule for its padding).
// One warp for up to 64 rows in float (32 in double; column j read twice from its slot
// instead of held in registers) spilled 300 to 400 bytes a thread at 512 threads: on an
// H100 the launch took 1.04 to 1.7 times as long where a chunk had 33 to 64 rows (17 to
// 32 in double), against two warps and their barrier per column.  32 doubles a lane for
// large k, column j read from its slot as each step uses it (no spills), made the factor
// 35 to 37 us a panel against 15.8 to 23.5 (H200, n = 2500 and 3000, k = 500, 4 to 16
// chunks; results/triangle-trace-NVIDIA-H200.md), Tables 6 to 9 1.01 to 1.5 times as long.
__device__ inline int tri_rpw(int k, int size)
{
    return k <= 4 ? 4 : (k <= 16 || size == 8) ? 16 : 32;
}

// k rows of B padded to a multiple of the rows per factoring warp (the factor reads them)
__device__ inline int tri_rows_padded(int k, int size)
{
    const int rpw = tri_rpw(k, size);
    return (k + rpw - 1) / rpw * rpw;
}

template <typename T>
__device__ __noinline__ void tri_factor(T* S, T* D, T* G, T* pd, T* cbuf, T* tau,
                           T* R, long ldr, T* B, long ldb, int n, int ncols, int k,
                           T sgn, int positive, int P, T* out, int* published, int* handed,
                           int hand, int* fail, int* done, long long* stamp)
{
    // Panel P against one chunk of k rows of B: its B columns are in S (k x 32, brought
    // up to date), its diagonal block of R in D.  Writes V_B and L^T to out, then
    // *published; then R's block and B's zeros, then *handed = hand (0: nothing to hand
    // on, the last chunk).  done: a zero count of the factor's steps, for the warp that
    // builds L alongside.  stamp: null, or the item's 8 time stamps (3 and 4 set here).
    const int tid = threadIdx.x;
    // pivots wp; columns wt of the tile (more where R has columns past n, like a right-
    // hand side: they are updated as trailing columns)
    const int c0 = P * TRI_W, wp = min(TRI_W, n - c0), wt = min(TRI_W, ncols - c0);
    __shared__ int first_fail;
    if (tid == 0) first_fail = 0x7fffffff;
    const int rpw = tri_rpw(k, sizeof(T));
    const int nw = (k + rpw - 1) / rpw;       // factor warps; a spare one builds L
    volatile int* helper = nw < TRI_NT / 32 ? done : nullptr;
    T* Vout = out;
    T* Lout = out + k * TRI_W;
#define TRI_FACTOR(RPW, ONE) tri_factor_columns<T, RPW, ONE>(S, D, G, pd, cbuf, tau, k, wp, \
        wt, sgn, positive, &first_fail, B + c0, ldb, Vout, Lout, helper)
    if (rpw == 4) TRI_FACTOR(4, true);
    else if (rpw == 16 && nw == 1) TRI_FACTOR(16, true);
    else if (rpw == 16) TRI_FACTOR(16, false);
    else if (nw == 1) TRI_FACTOR(32, true);
    else TRI_FACTOR(32, false);
#undef TRI_FACTOR
    __syncthreads();
    if (tid == 0) {                           // the block's writes, then the flag
        if (stamp) stamp[3] = tri_now();
        if (first_fail != 0x7fffffff) atomicMin(fail, c0 + first_fail);
        flag_release(published, 1);
        if (stamp) stamp[4] = tri_now();
        *done = 0;
    }
    // R's block (for the next chunk, or final) and B's annihilated columns
    for (int idx = tid; idx < TRI_W * TRI_W; idx += TRI_NT) {
        const int r = idx / TRI_W, c = idx - r * TRI_W;
        if (r < wp && c < wt && r <= c) R[(long)(c0 + r) * ldr + c0 + c] = D[idx];
    }
    for (int idx = tid; idx < k * TRI_W; idx += TRI_NT) {
        const int r = idx / TRI_W, c = idx - r * TRI_W;
        if (c < wp) B[(long)r * ldb + c0 + c] = 0;
    }
    __syncthreads();
    if (tid == 0 && hand) flag_release(handed, hand);
}

template <typename T>
__device__ void triangle_update(T* R, long ldr, T* B, long ldb, int n, int ncols, int k,
                                int kb, T sgn, int positive, T* work, int* published,
                                int* handed, int* fail, long long* trace)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const long slot = (long)(kb + TRI_W) * TRI_W;
    const int kp = tri_rows_padded(kb, sizeof(T));
    T* Vb = reinterpret_cast<T*>(smem_raw);   // kb x 32 + 32 x 32: a panel's V_B, L^T
    T* X = Vb + slot;                         // (32 + kp) x 32: a tile, R rows, B rows, zeros
    T* Z = X + (TRI_W + kp) * TRI_W;          // 32 x 33     Z; the factor's columns j
    T* D = Z + TRI_W * (TRI_W + 1);           // 32 x 32     the new panel's block of R
    T* G = D + TRI_W * TRI_W;                 // 32 x 32     (G and pd: a tile update's Y)
    T* pd = G + TRI_W * TRI_W;                // 2 x 32 x PS the factor warps' partial dots
    T* tau = pd + 2 * TRI_W * TRI_PS(T);      // 32
    __shared__ int steps_done;                // the factor's steps, for the warp building L
    if (tid == 0) steps_done = 0;
    const int np = (n + TRI_W - 1) / TRI_W, nt = (ncols + TRI_W - 1) / TRI_W;   // panels, tiles
    const int nc = (k + kb - 1) / kb, units = nc * nt;                           // chunks
    int held = -1;                            // the panel (c, J) whose V_B, L^T are in Vb

    // Items in the order of their diagonal d = c + J, and within one, the factors first
    // (the critical path), then the other tiles chunk by chunk (a panel loaded once).
    for (int d = -1; d < nc - 1 + np; ++d) {
        for (int pass = 0; pass < 2; ++pass) {
            for (int u = blockIdx.x; u < units; u += gridDim.x) {
                const int c = u / nt, t = u - c * nt, J = d - c;
                const bool factor = t < np && J == t - 1;     // (t = 0: nothing to apply)
                const bool apply = J >= 0 && J < min(t, np);
                if ((pass == 0) != factor || !(factor || apply)) continue;
                const int kc = min(kb, k - c * kb);           // the chunk's rows of B
                const int kcp = tri_rows_padded(kc, sizeof(T));
                T* Bc = B + (long)c * kb * ldb;
                const T sr = c == 0 && nc % 2 == 0 ? T(-1) : T(1);   // R read negated
                const int row0 = J * TRI_W, wJ = apply ? min(TRI_W, n - row0) : 0;
                const int panel = c * np + J;
                long long* stamp = factor && trace ? trace + 8 * (c * np + t) : nullptr;
                if (tid == 0 && c > 0) {      // the chunk before: panel t's block, rows J
                    if (factor) flag_wait(handed + t * nt + t, c);
                    if (apply) flag_wait(handed + J * nt + t, c);
                }
                __syncthreads();
                if (stamp && tid == 0) stamp[0] = tri_now();
                if (factor) {                 // the diagonal block of panel t
                    const int c0 = t * TRI_W, wp = min(TRI_W, n - c0), wt = min(TRI_W, ncols - c0);
                    for (int r = warp; r < TRI_W; r += TRI_NT / 32)
                        D[r * TRI_W + lane] = (r < wp && lane < wt)
                                              ? sr * R[(long)(c0 + r) * ldr + c0 + lane] : T(0);
                }
                tri_load(X, sr, R, ldr, Bc, ldb, ncols, kc, kcp, row0, wJ, t);
                if (apply && panel != held) { // panel (c, J), published by another SM
                    if (tid == 0) flag_wait(published + panel, 1);
                    __syncthreads();
                    tri_copy_in(Vb, work + panel * slot, (long)(kc + TRI_W) * TRI_W);
                    held = panel;
                }
                if (stamp && tid == 0) stamp[1] = tri_now();
                __syncthreads();
                if (apply) {
                    tri_apply(Vb, Vb + kc * TRI_W, X, G, Z, sgn, R, ldr, Bc, ldb, ncols, kc,
                              row0, wJ, t, factor);
                    if (tid == 0 && c + 1 < nc)     // rows J of tile t, for the next chunk
                        flag_release(handed + J * nt + t, c + 1);
                }
                if (stamp && tid == 0) stamp[2] = tri_now();
                if (factor)
                    tri_factor(X + TRI_W * TRI_W, D, G, pd, Z, tau, R, ldr, Bc, ldb, n, ncols,
                               kc, sgn, positive ? 1 : c > 0 ? 2 : 0, t,
                               work + (long)(c * np + t) * slot,
                               published + c * np + t, handed + t * nt + t,
                               c + 1 < nc ? c + 1 : 0, fail, &steps_done, stamp);
            }
        }
    }
}

extern "C" {
__global__ void __launch_bounds__(TRI_NT)
triangle_update_f32(float* R, long ldr, float* B, long ldb, int n, int ncols, int k, int kb,
                    float sgn, int positive, float* work, int* published, int* handed,
                    int* fail, long long* trace)
{ triangle_update<float>(R, ldr, B, ldb, n, ncols, k, kb, sgn, positive, work, published,
                         handed, fail, trace); }
__global__ void __launch_bounds__(TRI_NT)
triangle_update_f64(double* R, long ldr, double* B, long ldb, int n, int ncols, int k, int kb,
                    double sgn, int positive, double* work, int* published, int* handed,
                    int* fail, long long* trace)
{ triangle_update<double>(R, ldr, B, ldb, n, ncols, k, kb, sgn, positive, work, published,
                          handed, fail, trace); }
}
