// Rank-k Cholesky update and downdate with no chain of reflectors (float, double; k <= 64).
//
// R^T R + sgn V V^T = R^T (I + sgn P P^T) R with P = R^{-T} V (n x k), so the new factor is
// R~ = M R, M the upper triangular Cholesky factor of C = I + sgn P P^T.  M is structured
// (the method C1 of Gill, Golub, Murray and Saunders, 1974, taken in blocks): eliminating
// the rows before i0 leaves C's Schur complement I + sgn P' S^{-1} P'^T, P' = P's rows from
// i0 on and S = I + sgn sum_{i < i0} p_i p_i^T (k x k).  So for the block I of rows from i0,
// with S = L L^T and X = P_I L^{-T},
//     M_II = chol(I + sgn X X^T),   M_IJ = Wm_I P_J^T (J > I),   Wm_I = sgn M_II^{-T} X L^{-1},
// and since P^T R = V^T, row block I of the result is
//     R~_I = M_II R_I + Wm_I Z_I,   Z_I = V^T - sum_{J <= I} P_J^T R_J.
// Cost: k n^2 flops for P, k n^2 for the Z_I, k n^2 for Wm_I Z_I and 32 n^2 for M_II R_I,
// with R read twice and written once; the only chain is that of the triangular solve.
//
// structured_solve: one block per 64 columns C (its index from a ticket, so that every
//   block it waits for has started) solves P_C^T = z R_CC^{-1}, where
//   z = V^T_C - sum_{J<C} P_J^T R_JC is updated with each P_J as the block before
//   publishes it (flags).  y = z R_CC^{-1} (z before P_{C-2}), M2 = R_{C-2,C} R_CC^{-1}
//   and M = R_{C-1,C} R_CC^{-1} are made in advance, y -= P_{C-2} M2 as soon as P_{C-2}
//   comes, so the chain's step is one product: P_C = y - P_{C-1} M.  After
//   publishing P_C the block publishes G_C = P_C^T P_C (a second flag), sums
//   S = I + sgn sum_{J<C} G_J from the G_J the blocks before it published (a k x k read
//   per step, not a k x k x 64 product), factors its 64 rows of C (writing M_II and Wm_I
//   per 32 rows, for the apply) and leaves z at the starts of the apply's row segments (Zs).
// structured_apply: one block per 64 columns and segment of rows, R~_I = M_II R_I + Wm_I Z
//   32 rows at a time down the segment, from the segment's z, into out (R itself, or a new
//   array whose strict lower triangle it zeroes); each warp skips the rows of F that are
//   zero for its rows (M_II is upper triangular); for k = 1 in float, M_II's closed form
//   instead (a suffix sum down the rows: structured_apply1, st_apply_rank1).  After the
//   solve, it writes nothing if the solve found a breakdown, so a failed downdate leaves
//   R as it was.
// structured_update: both in one launch, into a new array: the first nb blocks (tickets)
//   solve, the others apply, each waiting for its segment's z (zflags) and for each block
//   of rows it reaches (done), so the product follows the chain instead of waiting for
//   its end.  The blocks of the solve write the zeros (a 64 x 64 tile of their rows each
//   time they wait in the loop over J < C - 2, the rest when done), not the apply: on an
//   H100 that made the update 2.5 to 6.5 percent faster at n = 10000 and 20000 (k <= 16;
//   up to 3 for k = 64) and 0 to 4 at n = 5000 in double, and 2 to 3 percent slower at
//   n = 5000 in float for k <= 16 (A/B in one process), where the apply had SMs to
//   spare for them.
//
// In double the products of 64 columns (z, y, M, and in the apply Z and R~_I) run on the
// tensor cores (st_product_dmma, st_apply_out): on an H100 the update at n = 20000 took
// 4.0, 5.5 and 8.5 ms for k = 1, 16 and 64, against 4.8, 9.0 and 16 ms by FMA; the
// blocks of k columns in shared memory then have padded rows (st_kp_ld).  In float the
// solve's products (and G_C where kp = 64) run there for k >= 8, in 3xTF32
// (st_product_tf32), with the residuals of FMA, and the apply's for k > 1 (R~_I) and
// k > 4 (Z; see st_apply_mma).  By FMA the 64 x 64 x 64 product of the
// chain's step took 4.3 to 5.4 us (by our count bound by shared memory: eight values
// loaded per sixteen multiply-adds); in 3xTF32 the update takes 15 to 18 percent less
// time at n = 5000 and 10000 for k = 16 and 64, and 6 to 12 percent less at n = 20000.
// With them a step of the chain (n = 10000, one launch) takes 3.6 us for k = 16 and 7.9
// for k = 64 (5.1 and 10.6 by FMA), the k = 64 product in it still 4.0 us.
// In double those products and the apply's (st_apply_out) are DMMA m16n8k4, each warp
// with four independent sums (before: m8n8k4, half the work an instruction):
// with the chain's products given their sizes as constants, a step of the k = 64 chain
// at n = 5000 went from 7.5 to 5.5 us (its product 3.5 to 1.75; a globaltimer stamp at
// each part of it), and the update took 0.81 to 0.90 of the time for k = 64, 0.87 to
// 0.88 for k = 16, 0.97 to 0.98 for k = 1 and 0.82 to 0.90 for k = 256 (n = 5000 and
// 10000, A/B with each build in its own process, median of 9 with L2 flushed, new array;
// the same results bit for bit).  The same layout in float (3xTF32, warps 2 x 4) made the
// product 1.5 times as fast alone on an SM but the update of k <= 16 up to 6 percent
// slower (registers: spills in the k <= 16 kernels) and k = 64 only 3 percent faster, so
// float kept its layout.  A block of the k = 64 chain publishes P_C four values a move,
// and in double straight from the last product's registers (st_product's pub): 0.98 of
// the time for k = 64 and 256 at n = 5000 and 10000 (A/B as above).  For k = 64 float's
// chain takes its step's products by the same DMMA, in double (st_product's WIDE), and
// publishes from their registers too: a step at n = 5000 and 10000 went from 7.4 and 7.5
// to 6.9 us (median; benchmarks/profile_structured.py), the call 2 to 2.5 percent less.
// Then every 64 x 64 x 64 product of the solve for k = 64 (the loop over J < C - 2, G_C,
// and the F work's X, C and Wm) went the same way: the update took 0.91 of the time at
// n = 5000 and 0.93 at 10000 for k = 64, 0.91 for k = 256 at n = 10000 (A/B with each
// build in its own process, 4 rounds), k = 16, 32 and 48 within 1.3 percent.
//
// Measured on an H100 (float, products by FMA, timestamps in the kernel): in one launch a
// step of the chain takes about 2.8 us for k = 1, 6 for k = 16 and 11.5 for k = 64, 10 to
// 30 percent less when the solve runs alone (two launches: no block of the apply shares its
// SMs).  A block's work after its step (S, its Cholesky factor, X, M_II and Wm) takes 30 to
// 50 us for k <= 16 and about 160 us for k = 64.  The update takes 0.37 to 1.23 ms at
// n = 5000 and 2.0 to 5.6 ms at n = 20000.  While every block of the solve is resident (up
// to n = 10000 in float) the chain bounds the update, the apply following it; beyond that
// (n = 20000, and n >= 10000 in double, one block per SM) the later blocks of the solve
// wait for SMs and the apply runs mostly after the chain.  Starting those blocks later
// still, to make room for the apply, was slower: a block that starts behind takes nearly a
// step per block to catch up.  The old chain of reflectors (triangle.cu) took 8.5 to 17.5 us
// per 32 columns.
//
// Where the time goes at n = 10000 (H100, a globaltimer stamp at each phase of every
// block): in float the apply keeps up with the chain and ends about 20 us after the last
// block of the solve (k = 1: the chain 560 us, that block's own work 36 us, the launch
// 616 us).  In double (one block per SM) the apply gets only the SMs of finished solve
// blocks, and half to 70 percent of its block time comes after the chain (k = 1: the
// chain 710 us, the launch 1090 us; at n = 20000, 2100 and 3800 us).  At n = 5000 (float,
// k = 1; 79 blocks, a step 2.5 us) the last P_C comes 247 us after the first block
// starts, the last block's F (its M_II factor 32 us of it, by st_cholesky: k = 1 now
// has it in closed form) at 287 and the apply's end at 304, of the 348 us the benchmark
// counts (with the flags' zeroing and read-back): the chain alone is 1.8 times the 137 us
// of 4x its floor.  These ways of shortening them
// were measured (A/B in one process, n = 5000 to 20000, k = 1, 16, 64) and dropped.
// Handing P_J on as tagged 8-byte words with no flag and no fence (NCCL's LL protocol)
// left the update between 5 percent faster (float) and 9 percent slower (double, k = 64):
// a step is bound by its own work (a k x 64 by 64 x 64 product and
// its barriers) and by the next block's preparation (two such products after P_{C-2}
// arrives), not by the flag.  Nor did handing P_C to blocks C + 1 and C + 2 through
// distributed shared memory (thread-block clusters of 2, 4 or 8; the receiver waits on an
// mbarrier in its own shared memory, no L2 round trip): the same result bit for bit, but
// float k = 1 and 16 from 4 percent faster to 10 percent slower (n = 5000 and 10000), and
// k = 64 10 to 14 percent faster at n = 5000, 26 to 40 slower at n = 10000 (two tiles of P
// coming in leave one block per SM).  Nor did running the apply's last 15 to 50 percent
// of jobs as a second launch (structured_apply: two blocks per SM in double): 1 to 14
// percent slower at n = 5000 and 10000 in double and 4 to 27 in float, and at n = 20000
// from 9 percent slower to 4 faster.  A ring of four tiles of R ahead in the apply
// (cp.async) left the one launch within 2 percent: its blocks are not short of loads in
// flight.  On an H200 too, where the apply runs mostly after the chain at n >= 10000 in
// double and n = 20000 in float: two or three groups of R's rows loaded ahead into
// registers (double; two in float for k <= 16) took 0.97 to 1.07 of the time at n = 5000
// to 20000, and two groups of R, F and P ahead in double 0.97 to 1.07 (A/B with each
// build in its own process).  The apply alone (structured_apply, after the solve, two
// blocks per SM) moved 2.0 TB/s there, 43 percent of the memory's peak, at a quarter of
// the SM's warps (registers; Nsight Compute).  What paid there was the apply's stores:
// two neighbouring doubles or four floats in one 16-byte store (st_apply_out), so that a
// warp's store fills whole 32-byte sectors of the output, made the update 4 to 6 percent
// faster in double (n = 5000 to 20000, k = 1 and 16) and 2 to 3 in float (k = 1).
// Taking P_{C-2} through M2 (one product after it comes, not a product for z and one
// for y) made the update 2 to 7 percent faster in float and up to 6 in double (A/B, the
// same cases); the tile it needs is made up by receiving P_J in y's place (the loop) and
// in a tile of R's (the chain).  Running the chain in pairs of blocks (the odd block of
// a pair eliminating its partner's P, so that both wait only for the pair before) was
// 4 to 70 percent slower: each block must then take two P_J per step into z, and the
// odd one twice the products, so the loop over J < C - 2, not the hand-over, bounds it.
//
// For k = 1 both the loop over J < C - 2 and the hand-off are lighter.  With every P_J and
// G_J published before the solve started (a second run of the solve launch on the first
// run's workspace, flags kept), the solve took nearly as long as with the chain: 191 against
// 209 us at n = 5000 and 401 against 434 at n = 10000 in float, 276 against 297 and 620
// against 633 in double (k = 1, H100): the blocks' own loop, about 2.3 us a step, bounded
// it as much as the chain did, so a faster hand-off alone could not show (above).  So for
// k = 1 the loop has no barrier per step (st_z_regs: each thread's share of z in a
// register, the shares summed only where a segment starts), and P_C reaches blocks C + 1
// and C + 2 as tagged words (st_ll_put), in kernels of their own (the names ending in
// 1_f32, 1_f64).  A/B in one process against the kernels before (H100,
// qrlab.cholesky_update, median of 7 with L2 flushed; the same results to rounding,
// k = 16 and 64 within 3 percent), us, into a new array (in place):
//     n               2000            5000            10000            20000
//     float    154 -> 142      300 -> 271      571 -> 535     1845 -> 1855
//             (164 -> 155)    (341 -> 313)    (817 -> 755)   (2265 -> 2233)
//     double   227 -> 205      385 -> 326     1096 -> 985     3816 -> 3386
//             (255 -> 228)    (515 -> 435)   (1359 -> 1158)  (4284 -> 3639)
// Each change alone took less: the loop alone 6 to 8 percent in float up to n = 5000 (2
// slower beyond) and 3 to 9 in double.  In float at n = 20000 (the solve's later blocks
// wait for SMs) neither helps; what bounds the chain there was not found.
// After that, a step of the k = 1 chain took about 2 us at n = 10000 in float (median;
// a globaltimer stamp at each part of it): about 1.3 us from block C - 1's tagged words
// going to block C having them, and 0.8 for block C's barriers, its product through
// shared memory and the product's reduction.  st_chain_narrow makes that last part in
// registers and shuffles, with no barrier: A/B in one process (as above), float 8
// percent faster at n = 2000 and 5000, 5 at 10000 and 2 at 20000; double 4 percent up to
// n = 5000, unchanged beyond.  The same timestamps showed block C's loop over J < C - 2
// ending about 3.6 us after block C - 3's step, after block C - 2's in nine cases of
// ten, and y = z R+_CC^{-1} made 0.8 us after that.  So st_chain_narrow now makes y too
// (R+_CC^{-1} in registers like M2 and Mx), and the loop takes P_{C-3} from its tagged
// words (no look at its flag, no load of P): A/B against the step alone, float 8 to 9
// percent faster up to n = 10000 and 3 at 20000, double 11 percent at n = 5000 (new
// array; 3 in place) and within 3 percent elsewhere.  (P_{C-3} from the tagged words
// alone, before, left the update within 2 percent at n >= 5000.)  Then the loop still
// ended about when block C - 1 stepped: its iterations that look at the flags finish
// 4.6 us after the step of the block they wait for, and each costs about a round trip to
// memory for R's tile when the loop catches up.  Taking P_{C-5} .. P_{C-3} from the
// tagged words made float 7 to 10 percent faster up to n = 10000 (3 at 20000) and
// double 6 to 8 up to n = 5000; then P_{C-8} .. P_{C-3} (ST_LL_LOOP), with z's shares
// summed by st_chain_narrow itself (one barrier after the loop instead of five), another
// 7 to 15 percent in float (5 at n = 20000) and 5 to 9 in double up to n = 5000 (new
// array), within 2 percent beyond.  (Double at n >= 10000, where the later blocks wait
// for SMs, moved by -2 to +3 percent over these steps.)
// For 1 < k <= 16 the same design, in kernels of their own (names ending in 16_f32,
// 16_f64): the loop keeps its sums in registers with each warp's part of P_J^T R_JC on the
// tensor cores (st_z_regs, st_frag_*), and the step is st_chain_wide, P_{C-8} .. P_{C-1}
// coming as words that are their own flag.  A/B on an H100 (each build in its own process,
// median of 9, L2 flushed, new array), k = 4 and 16, against the loop and step before:
// float 0.83 to 0.90 of the time at n = 5000 and 0.86 to 0.92 at 10000, double 0.67 to
// 0.72 and 0.80 to 0.88 (the loop and the step each measured against the one before, the
// ratios multiplied; the same results to rounding).
// On an H200, a step of the k = 1 chain part by part (profile_structured.py --chain:
// thread 0's stamps): block C starts to wait for P_{C-1} 0.7 to 1.1 us after block
// C - 1 sent it, then looks once (0.26 to 0.41 us, a round trip to L2) and makes P_C
// (0.19 to 0.32), where a value takes 0.2 us one way from SM to SM
// (benchmarks/handoff_latency.py).  It comes late because its loop runs two steps behind:
// it has P_{C-3} 2.2 to 3.1 us after block C - 3 sent it.  Waiting for P_{C-2} and
// P_{C-1} in one look, the loop's tagged words waited for before R's tile is taken from
// its registers, and R's tiles asked of L2 two or three steps ahead (alone and together)
// left the update within the runs' noise (0.94 to 1.07 of the time, float and double,
// n = 5000 to 20000; benchmarks/results/structured-phases-NVIDIA-H200.md).  In the loop an
// iteration has R's tile at once, and P_J 1.2 to 1.9 us later (0.6 in the last, which
// asks for no next tile): P_J's loads come after the next tile's, and a warp's loads come
// back in order.  R's tiles two ahead in shared memory by the bulk copy engine
// (cp.async.bulk, 16 copies a warp) brought P_J to 0.35 to 0.9 us, but issuing the copies
// took as long, and the update stayed at 0.97 to 1.00 of the time (same file); by each
// thread's cp.async instead, 0.94 to 1.07 (three rounds).  One bulk tensor copy a tile,
// issued by one thread, is what the loop does now (StRing): 0.84 to 0.91 of the time in
// float at n = 2000 to 10000 and 0.97 at 20000, 0.97 to 0.99 in double.
// Four or six tiles ahead (where a block has its SM: float, n <= 5056), and the same
// ring for 1 < k <= 16, left the update within the runs' noise (0.99 to 1.04, and 0.93 to
// 1.02): not kept (same file).  A step now takes 1.1 us (median; 1.35 on average at
// n = 5000, float), of which 0.74 is the hand-off under the apply's traffic.
// Layout: R (leading dimension ldr), out (ldo) and W = V^T (k x n; strides wq, wc).  R's
// strict lower triangle is not read, and its rows may have either sign (see st_solve).
// P, and each segment of Zs: npad x kp (npad = 64 nb, kp = k rounded up to 4), row i = p_i
// (times the sign of R[i][i]).  F: per 32 rows, (32 + kp) x 32: F[j][r] = M_II[r][j]
// (times the sign of row j) and F[32 + q][r] = Wm_I[r][q].  Gs: per block, kp x kp.
// sync: ints, zero: [ticket, fail, non-finite, zero diagonal, then per block a flag for P,
// one for G, the last segment whose z it wrote, F written, and the apply's jobs done in
// its tile of columns (each of these five parts padded to a multiple of 4 ints), then the
// count of the solve's blocks that are done and three ints unused], then for k <= 16 P's
// words (st_ll_put; per block, k = 1: 64 values beside tags, else 64 x 16 values in the
// order of st_chain_wide's fragments, st_frag_slot); a breakdown in column j
// leaves n - j in sync[1] (the largest kept, so the first column), a zero R[j][j] n - j
// in sync[3], a value of R or W that is not finite bit 1 or 2 in sync[2], a failed growth
// test (st_growth) bit 4.

#define ST_NT 256    // threads per block
#define ST_B 64      // rows and columns of a block of the solve
// Built with -DQRLAB_PHASE_TIMES, the one launch (structured_update) records a
// globaltimer stamp (ns) of each block at each phase in structured_stamps[ticket][slot]:
// a block of the solve at 0 its start, 1 R_CC^{-1}, M2 and Mx made, 2 its loop over
// J < C - 2 done, 3 P_C published, 4 G_C published, 7 S factored and X made, 5 F
// published, 6 its zeros written;
// a job of the apply at 0 its start, 1 its first rows ready, 6 its end
// (benchmarks/profile_structured.py reads them).  For k = 1 thread 0 of a block of the
// solve also stamps its step of the chain in structured_chain[ticket]: 0 it starts to
// wait for P_{C-1} (st_chain_narrow), 1 it has P_{C-1}, 2 its column of P_C is sent, 3 its
// loop over J < C - 2 has P_{C-3} (st_z_regs); and the block that writes the report
// stamps that in structured_reported.
#ifdef QRLAB_PHASE_TIMES
#define ST_STAMPED 16384
__device__ unsigned long long structured_stamps[ST_STAMPED][8];
__device__ unsigned long long structured_chain[ST_STAMPED][4];
__device__ unsigned long long structured_reported;
__shared__ int st_who;                        // the block's ticket
__device__ __forceinline__ unsigned long long st_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
template <int N>
__device__ __forceinline__ void st_stamp_into(unsigned long long (&stamps)[ST_STAMPED][N],
                                              int slot)
{
    const unsigned long long t = st_now();
    if (threadIdx.x == 0 && st_who < ST_STAMPED) stamps[st_who][slot] = t;
}
__device__ __forceinline__ void st_stamp(int slot) { st_stamp_into(structured_stamps, slot); }
__device__ __forceinline__ void st_chain_stamp(int slot) { st_stamp_into(structured_chain, slot); }
__device__ __forceinline__ void st_report_stamp() { structured_reported = st_now(); }
// and a job of the apply sums, as its thread 0 sees them, the SM cycles (clock64) of each
// part of its loop over groups of 32 rows in structured_parts[ticket]: 0 from the
// group's start to its first barrier (the flags looked at, the slowest warp's product
// before), 1 the stash and the next group's loads issued, to the second barrier, 2 the Z
// product, to the third, 3 thread 0's share of the output product and its stores; 4 the
// groups
__device__ long long structured_parts[ST_STAMPED][8];
#define ST_PART_START long long st_pt = clock64(), st_ps[4] = {}
#define ST_PART(i)                                                                     \
    do {                                                                               \
        const long long st_u = clock64();                                              \
        st_ps[i] += st_u - st_pt;                                                      \
        st_pt = st_u;                                                                  \
    } while (0)
#define ST_PART_END(groups)                                                            \
    do {                                                                               \
        if (threadIdx.x == 0 && st_who < ST_STAMPED) {                                 \
            for (int st_i = 0; st_i < 4; ++st_i)                                       \
                structured_parts[st_who][st_i] = st_ps[st_i];                          \
            structured_parts[st_who][4] = groups;                                      \
        }                                                                              \
    } while (0)
#else
__device__ __forceinline__ void st_stamp(int) {}
__device__ __forceinline__ void st_chain_stamp(int) {}
__device__ __forceinline__ void st_report_stamp() {}
#define ST_PART_START
#define ST_PART(i)
#define ST_PART_END(groups)
#endif
#define ST_LD 68     // leading dimension of 64-column tiles in shared memory: rows 4 banks
                     // apart, so that the lanes splitting a product's sum do not collide
#define ST_LL_LOOP 8 // k <= 16: the loop over J < C - 2 takes P_J from their words
                     // for J >= C - ST_LL_LOOP (st_z_regs)

// The per-block ints of sync (see the layout above): part 0 the P flags, 1 the G flags,
// 2 the last segment whose z a block wrote, 3 F written, 4 the apply's jobs done per tile
// of 64 columns (for a pass after this one, st_update); part 5 starts the count of the
// solve's blocks that are done (4 ints), after which come P's words for k <= 16
// (each part nb ints rounded up to 4, so that P's words start 16 bytes aligned)
enum { ST_P_FLAGS, ST_G_FLAGS, ST_Z_FLAGS, ST_DONE, ST_COLS, ST_COUNT };
template <typename I>
__device__ __forceinline__ I* st_sync_part(I* sync, int nb, int part)
{
    return sync + 4 + part * ((nb + 3) & ~3);
}

__device__ int st_poll(const int* flags, const int* gflags, int from, int end)
{
    // By one warp: the last J' < end such that blocks from .. J' have all published P_J
    // (flags[J]) and G_{J-1} (gflags[J - 1]), or from - 1 if block `from` has not.  Lane
    // i reads flags[from + i], lane 16 + i gflags[from + i - 1]: one load a lane, so one
    // round trip to L2 (two acquires in a row are two, the second ordered after the
    // first; saving it left the update's time as it was, within 2 percent), and a block
    // that starts behind the chain (at large n not every block of the solve is resident
    // at once) catches up with one per 16 blocks.
    const int lane = threadIdx.x & 31, J = from + (lane & 15);
    const int* f = lane < 16 || J == 0 ? flags + J : gflags + J - 1;
    const unsigned set = __ballot_sync(0xffffffff, J < end && flag_acquire(f) >= 1);
    const unsigned ok = set & (set >> 16);               // bit i: block from + i ready
    return from + __ffs(~ok) - 2;
}

__device__ int st_done_ready(const int* done, int from, int last)
{
    // By one warp, once block `from` has written its F (done[from]): the last J <= last
    // such that blocks from .. J all have, lane i reading done[from + i]
    int r;
    do {
        const int J = from + (threadIdx.x & 31);
        const unsigned set = __ballot_sync(0xffffffff, J <= last && flag_acquire(done + J) >= 1);
        r = ~set ? from + __ffs(~set) - 2 : from + 31;
    } while (r < from);
    return r;
}

__device__ int st_ready(const int* flags, const int* gflags, int from, int end)
{
    // st_poll, waiting for block `from` if it has not published
    int r;
    while ((r = st_poll(flags, gflags, from, end)) < from) {}
    return r;
}

template <typename T>
__device__ __forceinline__ void st_zero(T* out, long ldo, int r0, int h, int c0, int c1,
                                        int w0 = 0)
{
    // rows r0 .. r0 + h, columns c0 .. c1 of out set to zero, a row a warp, by warps w0
    // and after; streaming stores, as nothing reads them back
    const int lane = threadIdx.x & 31, nw = ST_NT / 32 - w0;
    for (int r = (threadIdx.x >> 5) - w0; r < h; r += nw)
        for (int c = c0 + lane; c < c1; c += 32) __stcs(out + (long)(r0 + r) * ldo + c, T(0));
}

template <int ROWS, typename T>
__device__ __forceinline__ void st_fetch(T x[ROWS / 4], const T* R, long ldr, int n, int r0,
                                         int c0)
{
    // rows r0 .. r0 + ROWS, columns c0 .. c0 + 64 of triu(R), zero outside R, into
    // registers: column tid % 64, rows tid / 64 + 4u.  From L2 (__ldcg): with passes, R
    // is the output of a launch that may still be running (st_update), so no load of it
    // may go through the read-only path or keep it in L1
    const int c = c0 + (threadIdx.x & 63), r = r0 + (threadIdx.x >> 6);
#pragma unroll
    for (int u = 0; u < ROWS / 4; ++u) {
        const int ru = r + 4 * u;
        x[u] = (ru <= c && c < n) ? __ldcg(R + (long)ru * ldr + c) : T(0);
    }
}

template <int N, typename T>
__device__ __forceinline__ bool st_finite(const T x[N])
{
    bool ok = true;
#pragma unroll
    for (int u = 0; u < N; ++u) ok &= isfinite(x[u]);
    return ok;
}

template <int ROWS, typename T>
__device__ __forceinline__ void st_stash(T* X, const T x[ROWS / 4], bool transpose = false)
{
    // what st_fetch read, into X (ROWS x 64, or its transpose 64 x ROWS; leading
    // dimension ST_LD)
    const int c = threadIdx.x & 63, r = threadIdx.x >> 6;
#pragma unroll
    for (int u = 0; u < ROWS / 4; ++u) {
        if (transpose) X[c * ST_LD + r + 4 * u] = x[u];
        else X[(r + 4 * u) * ST_LD + c] = x[u];
    }
}

template <int N, typename T>
__device__ __forceinline__ void st_fetch_vec(int4 v[N], const T* src, int count)
{
    // count values (16-byte multiple and alignment) written by another block: through L2
    const int nv = count * (int)sizeof(T) / 16;
    const int4* s = reinterpret_cast<const int4*>(src);
#pragma unroll
    for (int u = 0; u < N; ++u)
        if (threadIdx.x + u * ST_NT < nv) v[u] = __ldcg(s + threadIdx.x + u * ST_NT);
}

template <int N, typename T>
__device__ __forceinline__ void st_stash_vec(T* dst, const int4 v[N], int count)
{
    const int nv = count * (int)sizeof(T) / 16;
    int4* d = reinterpret_cast<int4*>(dst);
#pragma unroll
    for (int u = 0; u < N; ++u)
        if (threadIdx.x + u * ST_NT < nv) d[threadIdx.x + u * ST_NT] = v[u];
}

template <int N, typename T>
__device__ __forceinline__ void st_stash_rows(T* dst, const int4 v[N], int count, int width,
                                              int ld)
{
    // as st_stash_vec, the rows of `width` values each (a multiple of 16 bytes) stored
    // ld apart (padded, so that the tensor-core products' loads do not collide in banks)
    constexpr int per = 16 / sizeof(T);
#pragma unroll
    for (int u = 0; u < N; ++u) {
        const int e = (threadIdx.x + u * ST_NT) * per;
        if (e < count) *reinterpret_cast<int4*>(dst + (e / width) * ld + e % width) = v[u];
    }
}

__device__ __forceinline__ int st_kp_ld(int kp)
{
    // leading dimension in shared memory of a block of kp columns (P, z, X): kp + 4 where
    // kp is a multiple of 8, so that the four rows a tensor-core operand spans collide in
    // banks less (double: rows 8 or 24 banks apart, none; float: 4 apart, two ways where
    // kp would be four at kp = 64; kp + 8 would not fit the tiles of ST_LD that take P_J)
    return kp % 8 == 0 ? kp + 4 : kp;
}

template <int N, typename T>
__device__ __forceinline__ void st_stash_padded(T* dst, const int4 v[N], int count, int width,
                                                int ld)
{
    // st_stash_rows where the rows are padded (or double), else st_stash_vec (fewer
    // registers)
    if (sizeof(T) == 8 || ld != width) st_stash_rows<N>(dst, v, count, width, ld);
    else st_stash_vec<N>(dst, v, count);
}

template <typename T>
__device__ __forceinline__ void st_copy_in(T* dst, const T* src, int count, int width, int ld)
{
    // count values (at most 64 x 64) from global memory, written by another block, in
    // rows of width stored ld apart (st_kp_ld)
    int4 v[sizeof(T)];
    st_fetch_vec<sizeof(T)>(v, src, count);
    st_stash_padded<sizeof(T)>(dst, v, count, width, ld);
}

template <typename T>
__device__ __forceinline__ void st_copy_out(T* dst, const T* src, int count, int width, int ld)
{
    // count values (16-byte multiple and alignment) from shared memory, rows of width
    // stored ld apart, to global memory (rows contiguous)
    constexpr int per = 16 / sizeof(T);
    int4* d = reinterpret_cast<int4*>(dst);
    for (int i = threadIdx.x; i * per < count; i += ST_NT) {
        const int e = i * per;
        d[i] = *reinterpret_cast<const int4*>(src + (e / width) * ld + e % width);
    }
}

template <int TQ, typename T>
__device__ __forceinline__ void st_lda(const T* a, int aq, T v[4])
{
    // At[l][q0 .. q0 + TQ] from a = At[l] + q0 * aq: one vector load where they are
    // consecutive (aq = 1; q0 a multiple of TQ and rows of At aligned to 4 values)
    if (aq == 1 && TQ == 4) lds4(a, v);
    else if (aq == 1 && TQ == 2) lds2(a, v);
    else {
#pragma unroll
        for (int i = 0; i < TQ; ++i) v[i] = a[i * aq];
    }
}

template <int TQ, typename T>
__device__ __forceinline__ void st_mac(T acc[4][4], const T* At, int lda, const T* B, int ldb,
                                       int K, int q0, int c0, int aq = 1)
{
    // acc[i][j] += sum_{l < K} At[l][q0 + i] B[l][c0 + j], i < TQ, j < 4, where At[l][q] is
    // At[l * lda + q * aq]
#pragma unroll 4
    for (int l = 0; l < K; ++l) {
        T a[4], b[4];
        lds4(B + l * ldb + c0, b);
        st_lda<TQ>(At + l * lda + q0 * aq, aq, a);
#pragma unroll
        for (int i = 0; i < TQ; ++i) {
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
    }
}

// Float64 products run on the tensor cores (DMMA, mma.sync m8n8k4: per warp instruction
// an 8 x 8 tile of C plus an 8 x 4 tile of A times a 4 x 8 tile of B, 256 multiply-adds
// from two loads a lane, where the CUDA cores' FMA path needs about three loads for
// eight).  Lane (g, t) = (lane / 4, lane % 4) holds A[g][t], B[t][g] and C[g][2t + e],
// e = 0, 1.  (Float products: st_product_tf32, in 3xTF32, below.)
__device__ __forceinline__ void st_dmma(double c[2], double a, double b)
{
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
        : "+d"(c[0]), "+d"(c[1]) : "d"(a), "d"(b));
}

__device__ __forceinline__ int st_rows_per_thread(int rows)
{
    // rows of a product's output per thread: 16 row groups of them cover up to 64 rows
    return rows <= 16 ? 1 : rows <= 32 ? 2 : 4;
}

struct StSplit {
    // A product's outputs (rows x cols, cols a multiple of 4) over the block's threads:
    // ks neighbouring lanes split the sum (ks a power of two up to 16, as many as the
    // outputs leave threads for: a product with few rows is short), then columns
    // c0 .. c0 + 4, then rows q0 .. q0 + tq.  Lane s of the ks takes l = s, s + ks, ...
    int ks, s, c0, q0;
    __device__ StSplit(int rows, int cols, int tq)
    {
        const int ng = cols / 4, nf = (rows + tq - 1) / tq;
        ks = 1;
        while (ks < 16 && 2 * ks * ng * nf <= ST_NT) ks *= 2;
        s = threadIdx.x % ks;
        c0 = 4 * ((threadIdx.x / ks) % ng);
        q0 = (threadIdx.x / (ks * ng)) * tq;
    }
};

template <int TQ, typename T>
__device__ __forceinline__ void st_reduce(T acc[4][4], int ks)
{
    // sum the ks lanes' partial sums (every lane of the warp must call it)
    for (int o = ks / 2; o > 0; o /= 2) {
#pragma unroll
        for (int i = 0; i < TQ; ++i) {
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] += __shfl_xor_sync(0xffffffff, acc[i][j], o);
        }
    }
}

template <int TQ, typename T>
__device__ void st_product_tq(T* out, int oq, int oc, const T* At, int lda, const T* B,
                              int ldb, int K, int rows, int cols, T sgn, bool accumulate,
                              int czero, int aq)
{
    const StSplit sp(rows, cols, TQ);
    const int ks = sp.ks, s = sp.s, q0 = sp.q0, c0 = sp.c0;
    T acc[4][4] = {};
    if (q0 < rows && s < K)
        st_mac<TQ>(acc, At + s * lda, ks * lda, B + s * ldb, ks * ldb, (K - s + ks - 1) / ks, q0,
                   c0, aq);
    st_reduce<TQ>(acc, ks);
    if (s != 0 || q0 >= rows) return;
#pragma unroll
    for (int i = 0; i < TQ; ++i) {
        if (q0 + i < rows) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                T* o = out + (q0 + i) * oq + (c0 + j) * oc;
                *o = c0 + j < czero ? T(0) : (accumulate ? *o : T(0)) + sgn * acc[i][j];
            }
        }
    }
}

__device__ __forceinline__ void st_dmma16(double c[4], double a0, double a1, double b)
{
    // the same for a 16 x 4 tile of A and a 16 x 8 tile of C (m16n8k4): lane (g, t) holds
    // A[g][t] (a0), A[g + 8][t] (a1), B[t][g] and C[g (+8)][2t + e], e = 0, 1
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
        "{%0, %1, %2, %3};"
        : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])
        : "d"(a0), "d"(a1), "d"(b));
}

template <bool FIX, typename T>
__device__ void st_product_dmma(T* out, int oq, int oc, const T* At, int lda, const T* B,
                                int ldb, int K, int rows, T sgn, bool accumulate, int czero,
                                int aq, T* pub, const T* pub_sign)
{
    // st_product for 64 columns and K a multiple of 4, by DMMA m16n8k4: warp w the columns
    // 8 w .. 8 w + 8 and every tile of 16 rows, four independent sums (a 64 x 64 x 64
    // product took 1.8 us on an H100 alone on its SM, against 3.1 by m8n8k4 in 8 x 8
    // tiles, the warps 2 x 4, and 2.0 by m16n8k8)
    if constexpr (FIX) {   // (st_product: the products of the chain's step, as constants)
        K = rows = ST_B;
        lda = ldb = ST_LD;
        aq = 1;
    }
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int cw = 8 * (threadIdx.x >> 5), nt = (rows + 15) / 16;
    double acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int q = 16 * i + g + 8 * (e >> 1), c = cw + 2 * t + (e & 1);
            acc[i][e] = accumulate && q < rows ? double(out[q * oq + c * oc]) : 0.0;
        }
    }
#pragma unroll 2
    for (int l = 0; l < K; l += 4) {
        const T* a_row = At + (l + t) * lda;
        const double b = B[(l + t) * ldb + cw + g];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            if (i < nt) {
                const int q = 16 * i + g;
                const double a0 = q < rows ? double(sgn * a_row[q * aq]) : 0.0;
                const double a1 = q + 8 < rows ? double(sgn * a_row[(q + 8) * aq]) : 0.0;
                st_dmma16(acc[i], a0, a1, b);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int q = 16 * i + g + 8 * (e >> 1), c = cw + 2 * t + (e & 1);
            if (q >= rows) continue;
            const double v = c < czero ? 0.0 : acc[i][e];
            out[q * oq + c * oc] = T(v);
            if (pub) pub[c * rows + q] = T(v * double(pub_sign[c]));
        }
    }
}

// Float products of 64 columns run on the tensor cores too, in 3xTF32: TF32 keeps 10 bits
// of a float's 23, so each operand is split into a TF32 part and a TF32 remainder and the
// product taken as big x big + big x small + small x big (the small x small term is below
// float's rounding).  mma.sync m16n8k8: lane (g, t) holds A[g (+8)][t (+4)], B[t (+4)][g]
// and C[g (+8)][2t + e].
__device__ __forceinline__ void st_tf32_split(float x, unsigned& big, unsigned& small)
{
    // Veltkamp's split, in four adds and multiplies (two earlier versions that split by
    // cvt.rna.tf32 made the update no faster than by FMA): big is x rounded to 11
    // significant bits, which TF32 holds exactly, and small = x - big exactly; the mma
    // reads small to 11 bits
    const float p = __fmul_rn(x, 8193.f), b = __fsub_rn(p, __fsub_rn(p, x));
    big = __float_as_uint(b);
    small = __float_as_uint(__fsub_rn(x, b));
}

__device__ __forceinline__ void st_mma_tf32(float c[4], const unsigned a[4], const unsigned b[2])
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void st_mma_3xtf32_sums(float c[4], float low[4], const unsigned ab[4],
                                                   const unsigned as[4], float b0, float b1)
{
    // c += the big x big term of A B in 3xTF32 and low += the two others (A split already,
    // big ab, small as; B's two values split here), so that a tile's chain of dependent
    // mma can be two a step, not three (see st_product_tf32)
    unsigned bb[2], bs[2];
    st_tf32_split(b0, bb[0], bs[0]);
    st_tf32_split(b1, bb[1], bs[1]);
    st_mma_tf32(low, as, bb);
    st_mma_tf32(low, ab, bs);
    st_mma_tf32(c, ab, bb);
}

__device__ __forceinline__ void st_mma_3xtf32(float c[4], const unsigned ab[4],
                                              const unsigned as[4], float b0, float b1)
{
    // c += A B in 3xTF32, all three terms in one sum (the same mma in the same order)
    st_mma_3xtf32_sums(c, c, ab, as, b0, b1);
}

__device__ void st_product_tf32(float* out, int oq, int oc, const float* At, int lda,
                                const float* B, int ldb, int K, int rows, float sgn,
                                bool accumulate, int czero, int aq)
{
    // st_product for 64 columns and K a multiple of 8, in 3xTF32: warp w the columns
    // 8 w .. 8 w + 8, two tiles of 16 rows at a time (each split of B serves both).  The
    // big x big terms and the two others go to separate sums, so that a tile's chain of
    // dependent mma is two a step, not three (one sum: 2 to 3 percent slower at k = 32
    // and 64, the same residuals)
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int cw = 8 * (threadIdx.x >> 5);
    for (int r0 = 0; r0 < rows; r0 += 32) {
        float acc[2][4] = {}, low[2][4] = {};
        const bool two = r0 + 16 < rows;
#pragma unroll 1
        for (int l = 0; l < K; l += 8) {
            unsigned bb[2], bs[2], ab[2][4], as[2][4];
            st_tf32_split(B[(l + t) * ldb + cw + g], bb[0], bs[0]);
            st_tf32_split(B[(l + t + 4) * ldb + cw + g], bb[1], bs[1]);
#pragma unroll
            for (int i = 0; i < 2; ++i) {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int q = r0 + 16 * i + g + 8 * (e & 1), ll = l + t + 4 * (e >> 1);
                    st_tf32_split(q < rows ? At[ll * lda + q * aq] : 0.f, ab[i][e], as[i][e]);
                }
            }
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                if (i == 1 && !two) break;
                st_mma_tf32(low[i], as[i], bb);
                st_mma_tf32(low[i], ab[i], bs);
                st_mma_tf32(acc[i], ab[i], bb);
            }
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int q = r0 + 16 * i + g + 8 * (e >> 1), ce = cw + 2 * t + (e & 1);
                if (q >= rows) continue;
                float* o = out + q * oq + ce * oc;
                *o = ce < czero ? 0.f
                                : (accumulate ? *o : 0.f) + sgn * (acc[i][e] + low[i][e]);
            }
        }
    }
}

template <bool WIDE = false, typename T>
__device__ void st_product(T* out, int oq, int oc, const T* At, int lda, const T* B, int ldb,
                           int K, int rows, int cols, int tq, T sgn, bool accumulate,
                           int czero = 0, int aq = 1, T* pub = nullptr,
                           const T* pub_sign = nullptr)
{
    // out[q][c] (at out[q * oq + c * oc]) = (accumulate ? out[q][c] : 0)
    //     + sgn sum_{l < K} At[l][q] B[l][c]    for q < rows, c < cols (a multiple of 4),
    // and 0 for c < czero; At[l][q] is At[l * lda + q * aq].  Threads as StSplit, tq rows
    // each (1, 2 or 4: a template argument below, so that the sums stay in registers), so
    // at most ST_NT groups of tq x 4 outputs: 64 x 64 at tq = 4 (no caller needs more, and
    // nothing checks it: more would leave outputs unwritten).  No barrier; every thread
    // must call it (the partial sums meet by shuffles).  8 or more
    // rows of 64 columns go to the tensor cores: in double for K a multiple of 4
    // (st_product_dmma), in float for K a multiple of 8 (st_product_tf32); for fewer
    // rows the sum split over lanes has the shorter chain (the solve for k = 1 took 1.7
    // times as long by DMMA, for k = 3 to 6 up to 1.4 times).  WIDE: a product of the
    // kernels for k > 16; if it is 64 x 64 x 64 (k = 64, and every pass of a larger k), it
    // goes by DMMA in float too, in double, the values converted as they are loaded: one
    // block's product is done sooner that way than in 3xTF32 (fewer instructions, no
    // splits; the file's header has the times).  The tensor cores' peak rate in double is
    // under half 3xTF32's, so the narrower products of k = 32 and 48 keep 3xTF32 (the
    // loop over J < C - 2 and the blocks' F work by DMMA made k = 32 1.23 times as slow,
    // A/B with each build in its own process; the chain's step no faster).  pub (by DMMA
    // only): also pub[c * rows + q] = out[q][c] pub_sign[c], straight from the registers.
    // 64 x 64 x 64 from tiles of ST_LD (the chain's step for k = 64, M2 and Mx) with the
    // sizes as constants, so that the loads' addresses need no arithmetic (by the same
    // code with the sizes as arguments, the step's product took as long as by m8n8k4)
    const bool cube = rows == ST_B && K == ST_B && cols == 64;
    const bool fix = cube && lda == ST_LD && ldb == ST_LD && aq == 1;
    if constexpr (sizeof(T) == 8 || WIDE) {
        if ((sizeof(T) == 8 || cube) && rows >= 8 && cols == 64 && K % 4 == 0) {
            if (fix)
                st_product_dmma<true>(out, oq, oc, At, lda, B, ldb, K, rows, sgn, accumulate,
                                      czero, aq, pub, pub_sign);
            else
                st_product_dmma<false>(out, oq, oc, At, lda, B, ldb, K, rows, sgn, accumulate,
                                       czero, aq, pub, pub_sign);
            return;
        }
    }
    if constexpr (sizeof(T) == 4) {
        if (rows >= 8 && cols == 64 && K % 8 == 0) {
            st_product_tf32(out, oq, oc, At, lda, B, ldb, K, rows, sgn, accumulate, czero, aq);
            return;
        }
    }
    if (tq == 1)
        st_product_tq<1>(out, oq, oc, At, lda, B, ldb, K, rows, cols, sgn, accumulate, czero, aq);
    else if (tq == 2)
        st_product_tq<2>(out, oq, oc, At, lda, B, ldb, K, rows, cols, sgn, accumulate, czero, aq);
    else
        st_product_tq<4>(out, oq, oc, At, lda, B, ldb, K, rows, cols, sgn, accumulate, czero, aq);
}

template <typename T>
__device__ void st_invert(T* inv, const T* U, const T* rd, T* tmp)
{
    // inv = U^{-1} (64 x 64 upper triangular, rd[i] = 1 / U[i][i]; leading dimension
    // ST_LD), zero below the diagonal.  The 16 x 16 diagonal blocks by back substitution
    // in registers, a thread per column; then [A B; 0 D]^{-1} = [A^{-1}, -A^{-1} B D^{-1};
    // 0, D^{-1}] for 32 and then 64 rows, as products through tmp (32 x ST_LD).  Starts
    // and ends with the block in step.
    const int tid = threadIdx.x;
    if (tid < ST_B) {
        const int b = tid >> 4, jj = tid & 15, base = 16 * b;
        T x[16];
#pragma unroll
        for (int ii = 15; ii >= 0; --ii) {
            T s = 0;
#pragma unroll
            for (int l = ii + 1; l < 16; ++l) s = fma(U[(base + ii) * ST_LD + base + l], x[l], s);
            x[ii] = ii > jj ? T(0) : ii == jj ? rd[base + ii] : -s * rd[base + ii];
        }
#pragma unroll
        for (int ii = 0; ii < 16; ++ii) inv[(base + ii) * ST_LD + tid] = x[ii];
        for (int i = 0; i < ST_B; ++i)
            if ((i >> 4) != b) inv[i * ST_LD + tid] = 0;
    }
    for (int w = 16; w < ST_B; w *= 2) {           // join blocks of w into blocks of 2w
        for (int p = 0; p < ST_B; p += 2 * w) {
            __syncthreads();
            // tmp = B D^{-1}, then the block above D = -A^{-1} tmp
            st_product(tmp, ST_LD, 1, U + p * ST_LD + p + w, 1, inv + (p + w) * ST_LD + p + w,
                       ST_LD, w, w, w, w <= 16 ? 1 : 2, T(1), false, 0, ST_LD);
            __syncthreads();
            st_product(inv + p * ST_LD + p + w, ST_LD, 1, inv + p * ST_LD + p, 1, tmp, ST_LD,
                       w, w, w, w <= 16 ? 1 : 2, T(-1), false, 0, ST_LD);
        }
    }
    __syncthreads();
}

template <typename T>
__device__ __forceinline__ T st_rsqrt(T d) { return T(1) / sqrt(d); }

__device__ __forceinline__ float st_rcp(float d) { return __frcp_rn(d); }
__device__ __forceinline__ double st_rcp(double d) { return __drcp_rn(d); }

template <typename T>
__device__ int st_cholesky_rows(T* A, int rows, int la, int cols, T* rsd)
{
    // A[:, :rows] = U^T U in place (rows <= 64; the upper triangle is read and written),
    // its rows carrying the columns rows .. cols (so they end as U^{-T} times what they
    // were); returns the first row whose pivot is not positive, or -1.  rsd: scratch for
    // rows values.  Starts with a barrier, and ends with one if it returns -1.
    // Thread: column c = tid % cols, rows h0, h0 + hs, ... up to last (the diagonal, or
    // the last row for a carried column).  Step j subtracts row j's outer product (as it
    // is, scaled by 1 / d_j) from the rows below; it writes only rows below j, so one
    // barrier a step is enough, and row j is scaled by rsd[j] = d_j^{-1/2} at the end.
    // A thread's rows are read, updated and written four at a time, so that the loads of
    // a step overlap.  For M_II (64 rows) this takes 26 to 32 us of the 35 to 40 that a
    // block spends after its step of the chain at k = 1 (H100, globaltimer stamps), and
    // for the last block that is on the update's critical path (for k = 1 it is now
    // st_cholesky_rank1's closed form, below).  Double keeps it (st_cholesky_blocked
    // made its update 2.5 to 5.6 percent slower).  Keeping a thread's rows in registers
    // (32 predicated slots, row j + 1 handed on through A after step j) made that work
    // twice as long at k = 16 and 64 (n = 5000: 61 to 133 us in float, 52 to 118 in
    // double) and the update 4 to 38 percent slower (H100, A/B).  For updates,
    // C = I + X X^T factored by groups of 16 rows (Woodbury on (I + sum of the groups'
    // X_H^T X_H before)^{-1}: four factorizations of 16 rows and products of k columns)
    // gave the same errors and left the update 0.1 to 2.2 percent slower (H200, k = 16
    // and 64, A/B; benchmarks/results/structured-phases-NVIDIA-H200.md).
    const int hs = ST_NT / cols, c = threadIdx.x % cols, h0 = threadIdx.x / cols;
    const int last = h0 >= hs ? -1 : c >= rows ? rows - 1 : c;
    int i0 = h0;                                      // this thread's first row below j
    for (int j = 0; j < rows; ++j) {
        __syncthreads();
        const T d = A[j * la + j];
        if (!(d > T(0))) return j;                   // every thread reads the same d
        if (threadIdx.x == 0) rsd[j] = st_rsqrt(d);
        if (i0 == j) i0 += hs;
        if (i0 > last) continue;
        const T ujc = A[j * la + c] * st_rcp(d);
        for (int i = i0; i <= last; i += 4 * hs) {
            T a[4], uji[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const bool in = i + u * hs <= last;
                a[u] = in ? A[(i + u * hs) * la + c] : T(0);
                uji[u] = in ? A[j * la + i + u * hs] : T(0);
            }
#pragma unroll
            for (int u = 0; u < 4; ++u)
                if (i + u * hs <= last) A[(i + u * hs) * la + c] = fma(-uji[u], ujc, a[u]);
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < rows * cols; e += ST_NT) {
        const int j = e / cols, c = e % cols;
        if (c >= j) A[j * la + c] *= rsd[j];
    }
    __syncthreads();
    return -1;
}

template <typename T>
__device__ int st_cholesky_blocked(T* A, int rows, int la, int cols, T* rsd)
{
    // st_cholesky_rows' result (cols <= 128), by blocks of 16 rows with three barriers
    // each, not one a row: warp 0 factors the diagonal block in registers (lane c holds
    // its column c; a step's row reaches the lanes by shuffles), a thread per later
    // column solves the block's rows with it (U_bb^{-T}), and the rows below take the
    // block's rank-16 product, each warp 4 rows of it and each lane columns 32 apart.
    // rsd[j] = d_j^{-1/2} = 1 / U[j][j] as there.  On an H200 (A/B with each build in its
    // own process, 3 rounds of 7) the float update took 0.934 of the time at n = 10000
    // and 0.964 at n = 5000 for k = 64, 0.98 to 1.00 for k = 16 and 1.00 to 1.01 at
    // n = 20000: a block's work after its P went from 115 to 99 us at k = 64 (C's
    // factor, 64 rows of 128 columns, 46 to 33 us), but hardly moved at k = 16 (33 to 32
    // us for 80 columns, where a row's step costs less).  Double's update took 1.025 to
    // 1.056 of the time (S's factor for k = 64 took 40 us, not 25; probably because one
    // warp runs a block's 16 steps, each a double square root and division), so double
    // keeps st_cholesky_rows.  (Times of the parts: globaltimer stamps in each block.)  With
    // their loops unrolled, the two solves of a block made ptxas spill 16 to 76 bytes
    // more in the solve's kernels; so each keeps a column's remaining rows in registers
    // and shifts them down a slot a step (row j + i in slot i), the same code each step.
    __shared__ int failed;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    __syncthreads();
    for (int j0 = 0; j0 < rows; j0 += 16) {
        const int jb = min(16, rows - j0);
        if (warp == 0) {                                     // U_bb, and rsd
            T a[16];
            int bad = -1;
#pragma unroll
            for (int i = 0; i < 16; ++i)
                a[i] = i <= lane && lane < jb ? A[(j0 + i) * la + j0 + lane] : T(0);
#pragma unroll 1
            for (int j = 0; j < jb; ++j) {
                const T d = __shfl_sync(0xffffffff, a[0], j);
                if (bad < 0 && !(d > T(0))) bad = j;         // the same on every lane
                const T r = st_rsqrt(d), u = a[0] * r;       // U[j][lane]
                if (lane == j) rsd[j0 + j] = r;
                if (j <= lane && lane < jb) A[(j0 + j) * la + j0 + lane] = u;
#pragma unroll
                for (int i = 1; i < 16; ++i)
                    a[i - 1] = fma(-__shfl_sync(0xffffffff, u, j + i), u, a[i]);
                a[15] = T(0);
            }
            if (lane == 0) failed = bad >= 0 ? j0 + bad : -1;
        }
        __syncthreads();
        if (failed >= 0) return failed;
        const int c = j0 + jb + tid;                         // U_bb^{-T} times column c
        if (c < cols) {
            T y[16];
#pragma unroll
            for (int t = 0; t < 16; ++t) y[t] = t < jb ? A[(j0 + t) * la + c] : T(0);
#pragma unroll 1
            for (int s = 0; s < jb; ++s) {
                const T* u = A + (j0 + s) * la + j0 + s;     // U[s][s ..]
                const T ys = y[0] * rsd[j0 + s];
                A[(j0 + s) * la + c] = ys;
#pragma unroll
                for (int t = 1; t < 16; ++t)
                    y[t - 1] = s + t < jb ? fma(-u[t], ys, y[t]) : T(0);
                y[15] = T(0);
            }
        }
        __syncthreads();
        // rows i .. i + 3 below the block, columns i + lane + 32 u (those before the row's
        // diagonal left as they are)
        const int below = j0 + jb;
        for (int i = below + 4 * warp; i < rows; i += ST_NT / 8) {
            T acc[4][4] = {};
            for (int t = 0; t < jb; ++t) {
                const T* y = A + (j0 + t) * la;
                T yi[4], yc[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    yi[e] = i + e < rows ? y[i + e] : T(0);
                    yc[e] = i + lane + 32 * e < cols ? y[i + lane + 32 * e] : T(0);
                }
#pragma unroll
                for (int e = 0; e < 4; ++e)
#pragma unroll
                    for (int u = 0; u < 4; ++u) acc[e][u] = fma(yi[e], yc[u], acc[e][u]);
            }
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const int cu = i + lane + 32 * u;
                    if (i + e < rows && i + e <= cu && cu < cols)
                        A[(i + e) * la + cu] -= acc[e][u];
                }
        }
        __syncthreads();
    }
    return -1;
}

template <typename T>
__device__ int st_cholesky(T* A, int rows, int la, int cols, T* rsd)
{
    // st_cholesky_blocked in float, st_cholesky_rows in double (see st_cholesky_blocked)
    if constexpr (sizeof(T) == 4) return st_cholesky_blocked(A, rows, la, cols, rsd);
    else return st_cholesky_rows(A, rows, la, cols, rsd);
}

template <typename T>
__device__ int st_cholesky_rank1(T* A, int la, const T* x, T sgn, T* rs)
{
    // st_cholesky's result for A = [I + sgn x x^T | x] (64 rows, x in column 64 and
    // zeros after it up to la) in closed form, the method C1 of Gill, Golub, Murray and
    // Saunders within the block: with t_{-1} = 1 and t_r = t_{r-1} + sgn x_r^2,
    //     U[r][r] = sqrt(t_r / t_{r-1}),   U[r][c] = sgn x_r x_c / sqrt(t_r t_{r-1}) (c > r),
    //     (U^{-T} x)_r = x_r / sqrt(t_r t_{r-1}).
    // A thread sums its own t_r (64 terms), so there is no chain of 64 steps with a
    // barrier each.  Returns the first r with t_r not positive (pivot t_r / t_{r-1}), or
    // -1; rs: scratch for 128 values.  Starts and ends with a barrier.  On an H100 (A/B in
    // one process, the update at k = 1) it took 2 to 13 percent off the update in float
    // (n = 200 to 10000) and 2 to 7 in double (n = 1000 and 10000; n = 5000 the same),
    // and the error max |R~^T R~ - A~| / max |A~| was no larger (float: 3e-7 to 4e-7,
    // against 5e-7 to 1e-6 by st_cholesky).
    __shared__ int first;
    const int tid = threadIdx.x;
    __syncthreads();
    if (tid == 0) first = ST_B;
    if (tid < ST_B) {
        T before = 1, t = 1;
        for (int j = 0; j <= tid; ++j) {
            before = t;
            t = fma(sgn * x[j], x[j], t);
        }
        if (!(t > T(0))) atomicMin(&first, tid);
        const T q = st_rsqrt(before) * st_rsqrt(t);
        rs[tid] = q;
        rs[ST_B + tid] = sqrt(t) * st_rsqrt(before);
        for (int c = ST_B; c < la; ++c) A[tid * la + c] = c == ST_B ? x[tid] * q : T(0);
    }
    __syncthreads();
    if (first < ST_B) return first;
    for (int e = tid; e < ST_B * ST_B; e += ST_NT) {
        const int r = e / ST_B, c = e % ST_B;
        if (c >= r) A[r * la + c] = c == r ? rs[ST_B + r] : sgn * x[r] * x[c] * rs[r];
    }
    __syncthreads();
    return -1;
}

__device__ __forceinline__ unsigned st_gram_chunk(int u)
{
    // this thread's u-th 16-byte chunk of a kp x kp block: its share of the sum of the
    // G_J (g[16] in st_solve) is chunks tid, tid + ST_NT, ..., at most 16 values
    return threadIdx.x + u * ST_NT;
}

template <typename T>
__device__ __forceinline__ void st_gram_fetch(int4 v[sizeof(T)], const T* G, int kp)
{
    // this thread's share of G (kp x kp, published by another block), from L2
    constexpr int per = 16 / sizeof(T);
    const int nv = kp * kp / per;
    const int4* src = reinterpret_cast<const int4*>(G);
#pragma unroll
    for (int u = 0; u < 16 / per; ++u)
        v[u] = st_gram_chunk(u) < nv ? __ldcg(src + st_gram_chunk(u)) : int4{0, 0, 0, 0};
}

template <typename T>
__device__ __forceinline__ void st_gram_add(T g[16], const int4 v[sizeof(T)])
{
    // g += a share that st_gram_fetch read (zero past the kp x kp values)
    constexpr int per = 16 / sizeof(T);
#pragma unroll
    for (int u = 0; u < 16 / per; ++u) {
        const T* t = reinterpret_cast<const T*>(&v[u]);
#pragma unroll
        for (int e = 0; e < per; ++e) g[u * per + e] += t[e];
    }
}

template <typename T>
__device__ __forceinline__ void st_gram_add(T g[16], const T* G, int kp)
{
    int4 v[sizeof(T)];
    st_gram_fetch<T>(v, G, kp);
    st_gram_add(g, v);
}

template <typename T>
__device__ void st_gram_sum(T g[16], const T* Gs, int kp, int count, T* red)
{
    // g = this thread's share of G_0 + ... + G_{count-1} (kp <= 16, so that a share is
    // one chunk, and only threads below kp * kp / per have one), all threads reading:
    // groups of threads take every groups-th G_J, four loads in flight each, and the
    // groups' sums meet in red (shared, ST_NT chunks).  One thread a chunk, one G_J after
    // another, had been a round trip to L2 per block before this one: against that, on an
    // H100 (A/B with each build in its own process, k = 1 and 16, new array), the update
    // took 1.3 to 5.2 percent less time in float (n = 2000 to 10000) and 2 to 4 in double
    // (n = 2000 and 5000; within 0.4 at 10000), and a block's work after its step at
    // n = 5000 went from 17 to 12 us (float, k = 1), 24 to 13 (double, k = 1) and 63 to 52
    // (double, k = 16).  (For k > 16 the loop over J < C - 2 sums the G_J as they come.)
    constexpr int per = 16 / sizeof(T);
    const int nv = kp * kp / per, tid = threadIdx.x;
    int width = 1;                                   // chunks per group: a power of 2
    while (width < nv) width *= 2;
    const int groups = ST_NT / width, grp = tid / width, ch = tid % width;
    T s[per] = {};
    auto add = [&](const int4& v) {
#pragma unroll
        for (int e = 0; e < per; ++e) s[e] += reinterpret_cast<const T*>(&v)[e];
    };
    if (ch < nv) {
        const int4* src = reinterpret_cast<const int4*>(Gs) + ch;
        const long step = (long)kp * kp / per;
        int J = grp;
        for (; J + 3 * groups < count; J += 4 * groups) {
            int4 v[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) v[u] = __ldcg(src + (J + u * groups) * step);
#pragma unroll
            for (int u = 0; u < 4; ++u) add(v[u]);
        }
        for (; J < count; J += groups) add(__ldcg(src + J * step));
    }
    __syncthreads();
#pragma unroll
    for (int e = 0; e < per; ++e) red[tid * per + e] = s[e];
    __syncthreads();
    if (tid < nv)
        for (int q = 1; q < groups; ++q)
#pragma unroll
            for (int e = 0; e < per; ++e) s[e] += red[(q * width + tid) * per + e];
#pragma unroll
    for (int e = 0; e < per; ++e) g[e] = tid < nv ? s[e] : T(0);
    __syncthreads();
}

__device__ __forceinline__ void st_store_release(int* p, int v)
{
    // to the other warps of the block (shared memory, by its generic address)
    asm volatile("st.release.cta.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ int st_load_acquire(const int* p)
{
    int v;
    asm volatile("ld.acquire.cta.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// P_C for k <= 16 handed to the blocks after C as words that say themselves that they
// have come (NCCL's LL protocol), so that the value comes with the news that it is there:
// no flag, no release, and one round trip to L2 instead of two.  The words start zeroed.
// For k = 1 (TAGGED) each value lies beside a tag in one store (a float and the tag, 8
// bytes; a double as two halves, each beside a tag, 16).  For k > 1 a word is the value
// itself, its own flag (4 or 8 bytes, single-copy atomic; +0, all bits zero, is written
// as -0): a lane there waits for 32 values at once, which with tags spilled registers.
// (The same words for k = 1 made it 5 to 13 percent slower, A/B on an H100.)
template <bool TAGGED, typename T>
__device__ __forceinline__ void st_ll_put(T* w, T v)
{
    if constexpr (TAGGED && sizeof(T) == 4) {
        asm volatile("st.volatile.global.v2.u32 [%0], {%1, %2};"
                     :: "l"(w), "r"(__float_as_uint(v)), "r"(1u) : "memory");
    } else if constexpr (TAGGED) {
        const unsigned long long b = __double_as_longlong(v);
        asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};"
                     :: "l"(w), "r"((unsigned)b), "r"(1u), "r"((unsigned)(b >> 32)), "r"(1u)
                     : "memory");
    } else if constexpr (sizeof(T) == 4) {
        const unsigned b = __float_as_uint(v);
        asm volatile("st.volatile.global.u32 [%0], %1;" :: "l"(w), "r"(b ? b : 0x80000000u)
                     : "memory");
    } else {
        const unsigned long long b = __double_as_longlong(v);
        asm volatile("st.volatile.global.u64 [%0], %1;" :: "l"(w), "l"(b ? b : 1ull << 63)
                     : "memory");
    }
}

template <int N, bool TAGGED, typename T, typename Off, typename Ok>
__device__ __forceinline__ void st_ll_wait(T v[N], const T* w, Off off, Ok ok)
{
    // v[u] = the value off(u) past w (a tagged value takes two: TAGGED) once it has come
    // (zero where !ok(u)), u < N: every load issued before any is looked at (one round
    // trip to L2, not N), again until all have come.  (off(u) should fold to a constant,
    // so that the loads need no address registers of their own.)
    bool all;
    do {
        all = true;
#pragma unroll
        for (int u = 0; u < N; ++u) {
            if (!ok(u)) {
                v[u] = T(0);
                continue;
            }
            const T* wu = w + (TAGGED ? 2 : 1) * off(u);
            if constexpr (TAGGED && sizeof(T) == 4) {
                unsigned d[2];
                asm volatile("ld.volatile.global.v2.u32 {%0, %1}, [%2];"
                             : "=r"(d[0]), "=r"(d[1]) : "l"(wu) : "memory");
                all &= d[1] == 1u;
                v[u] = __uint_as_float(d[0]);
            } else if constexpr (TAGGED) {
                unsigned d[4];
                asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                             : "l"(wu) : "memory");
                all &= d[1] == 1u && d[3] == 1u;
                v[u] = __longlong_as_double(
                    (long long)(((unsigned long long)d[2] << 32) | d[0]));
            } else if constexpr (sizeof(T) == 4) {
                unsigned d;
                asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(d) : "l"(wu) : "memory");
                all &= d != 0u;
                v[u] = __uint_as_float(d);
            } else {
                unsigned long long d;
                asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(d) : "l"(wu) : "memory");
                all &= d != 0ull;
                v[u] = __longlong_as_double((long long)d);
            }
        }
    } while (!all);
}

template <int N, typename T>
__device__ __forceinline__ void st_ll_wait_rows(T v[N], const T* w, int step)
{
    // st_ll_wait of the tagged values (k = 1) step apart from w
    st_ll_wait<N, true>(v, w, [=](int u) { return u * step; }, [](int) { return true; });
}

template <typename T>
__device__ __forceinline__ T st_z_at(const T* zT, int kl, const T* red, int kq, int r, int q)
{
    // z[r][q] after st_z_regs: z as it was (zT, rows kl apart) less the shares of the four
    // groups of rows of R's tiles (red, kq values a row)
    const T* s = red + r * kq + q;
    return zT[r * kl + q] - (s[0] + s[ST_B * kq] + s[2 * ST_B * kq] + s[3 * ST_B * kq]);
}

template <typename T>
__device__ __forceinline__ T st_z_row(const T* zT, const T* red, int r)
{
    return st_z_at(zT, 4, red, 1, r, 0);               // k = 1 (kp = kl = 4, kq = 1)
}

template <typename T>
__device__ __forceinline__ void st_chain_narrow(int C, const T* zT, const T* red, T* yT, int kl,
                                                const T* inv, const T* M2, const T* Mx,
                                                const T* dsign, T* ll)
{
    // The chain's step for k = 1, P_C = z R+_CC^{-1} - P_{C-2}^T M2 - P_{C-1}^T Mx (z from
    // zT and red, st_z_row; P_C goes to yT), with no barrier from z's shares being in red
    // to D_C P_C's going: warp w makes columns 8w .. 8w + 8, lane l from rows 2l and
    // 2l + 1, with its share of R+_CC^{-1}, M2 and Mx in registers and those two rows of
    // P_J read by the lane itself from the tagged words.  The lanes' sums meet by
    // shuffles (each round halving the columns a lane holds), and lane 4c hands column
    // 8w + c on as soon as it has it.  Needs a barrier after red's writing; none at the
    // end.
    const int lane = threadIdx.x & 31, c = 8 * (threadIdx.x >> 5);
    T m[3][2][8];                             // [R_CC^-1, M2, Mx][row 2l + e][column c + j]
#pragma unroll
    for (int e = 0; e < 2; ++e) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            m[0][e][j] = inv[(2 * lane + e) * ST_LD + c + j];
            m[1][e][j] = M2[(2 * lane + e) * ST_LD + c + j];
            m[2][e][j] = Mx[(2 * lane + e) * ST_LD + c + j];
        }
    }
    T acc[8] = {};
#pragma unroll
    for (int s = 0; s < 3; ++s) {
        const int J = C - 3 + s;                       // (s > 0: P_{C-2}, P_{C-1})
        T p[2];
        if (s == 0) {
            p[0] = st_z_row(zT, red, 2 * lane);
            p[1] = st_z_row(zT, red, 2 * lane + 1);
        } else if (J >= 0) {
            if (s == 2) st_chain_stamp(0);
            st_ll_wait_rows<2>(p, ll + 2 * ((long)J * ST_B + 2 * lane), 1);
            if (s == 2) st_chain_stamp(1);
            p[0] = -p[0];
            p[1] = -p[1];
        } else {
            continue;
        }
#pragma unroll
        for (int e = 0; e < 2; ++e) {
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[j] = fma(p[e], m[s][e][j], acc[j]);
        }
    }
    // 8 columns over 32 lanes: lanes o apart swap halves (o = 16, 8, 4), then sum in pairs
#pragma unroll
    for (int h = 4, o = 16; h >= 1; h /= 2, o /= 2) {
        const bool upper = lane & o;
#pragma unroll
        for (int j = 0; j < h; ++j) {
            const T give = upper ? acc[j] : acc[j + h];
            acc[j] = (upper ? acc[j + h] : acc[j]) + __shfl_xor_sync(0xffffffff, give, o);
        }
    }
    acc[0] += __shfl_xor_sync(0xffffffff, acc[0], 2);
    acc[0] += __shfl_xor_sync(0xffffffff, acc[0], 1);
    // lane's column: bit 4 of the lane chose the upper 4, bit 3 the upper 2, bit 2 the upper 1
    const int col = c + ((lane >> 4) & 1) * 4 + ((lane >> 3) & 1) * 2 + ((lane >> 2) & 1);
    if ((lane & 3) == 0) {
        st_ll_put<true>(ll + 2 * ((long)C * ST_B + col), acc[0] * dsign[col]);
        yT[col * kl] = acc[0];
    }
    st_chain_stamp(2);
}

// st_z_regs for 1 < k <= 16 takes each P_J^T R_JC on the tensor cores (in float 3xTF32,
// as st_product_tf32) from registers: warp w the rows 16 (w / 2) .. + 16 of R's tile (the
// group of the sum it adds to) and its columns 32 (w % 2) .. + 32, and q < 16 (k rounded
// up, the rest zeros).  Lane (g, t) = (lane / 4, lane % 4) holds 16 values of R's tile,
// 8 of P_J and 16 sums; the fragments below are those of mma.sync m16n8k8 (float) and
// m8n8k4 (double).
template <typename T>
__device__ __forceinline__ int st_frag_row(int i)
{
    // row (within the warp's 16) of R's value i in a lane's share (B fragments), less t
    return sizeof(T) == 4 ? 8 * (i >> 3) + 4 * (i & 1) : 4 * (i >> 2);
}

template <typename T>
__device__ __forceinline__ int st_frag_col(int i)
{
    // column (within the warp's 32) of R's value i in a lane's share, less g
    return sizeof(T) == 4 ? 8 * ((i >> 1) & 3) : 8 * (i & 3);
}

template <typename T>
__device__ __forceinline__ void st_frag_fetch(T x[16], const T* R, long ldr, int n, int r0,
                                              int c0)
{
    // this lane's share of rows r0 .. r0 + 64, columns c0 .. c0 + 64 of triu(R), zero
    // outside R
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int r = r0 + 16 * (w >> 1) + (lane & 3), c = c0 + 32 * (w & 1) + (lane >> 2);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        const int ri = r + st_frag_row<T>(i), ci = c + st_frag_col<T>(i);
        x[i] = (ri <= ci && ci < n) ? __ldcg(R + (long)ri * ldr + ci) : T(0);
    }
}

template <typename T, int N>
__device__ __forceinline__ int2 st_frag_a(int i)
{
    // (row, q) of a lane's A value i of P_J^T (of N: its rows of R's tile, or all 64 in
    // st_chain_wide): float [k step s][e]: row 8 s + t + 4 (e / 2), q = g + 8 (e % 2);
    // double [m][s]: row 4 s + t, q = g + 8 m
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if constexpr (sizeof(T) == 4) return {8 * (i >> 2) + 4 * ((i >> 1) & 1) + t, g + 8 * (i & 1)};
    else return {4 * (i % (N / 2)) + t, g + 8 * (i / (N / 2))};
}

template <typename T, int N>
__device__ __forceinline__ int st_frag_off(int i, int r0, int kp)
{
    // where in a P_J (64 x kp) a lane's A value i lies (-1: q >= kp, a zero), rows from r0
    const int2 rq = st_frag_a<T, N>(i);
    return rq.y < kp ? (r0 + rq.x) * kp + rq.y : -1;
}

template <typename T>
__device__ __forceinline__ int st_frag_slot(int r, int q)
{
    // where value (r, q) of P_J lies among its words for k > 1 (st_ll_put; 64 x 16 a block,
    // whatever kp): A value i of lane l of st_chain_wide at 32 i + l, so that a lane's
    // loads lie at constant offsets from one address (the loop's lanes read a part)
    if constexpr (sizeof(T) == 4)
        return 32 * (4 * (r >> 3) + 2 * ((r >> 2) & 1) + (q >> 3)) + 4 * (q & 7) + (r & 3);
    else
        return 32 * (16 * (q >> 3) + (r >> 2)) + 4 * (q & 7) + (r & 3);
}

template <typename T>
__device__ __forceinline__ void st_frag_p(T a[8], const T* PJ, int kp)
{
    // this lane's 8 values of P_J (64 x kp, at PJ), from L2
    const int r0 = 16 * (threadIdx.x >> 6);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int off = st_frag_off<T, 8>(i, r0, kp);
        a[i] = off >= 0 ? __ldcg(PJ + off) : T(0);
    }
}

template <typename T>
__device__ __forceinline__ void st_frag_mma(T acc[16], const T a[8], const T x[16])
{
    // acc += P_J^T R_JC, this warp's part: float acc[n tile j][e] (C fragments), double
    // acc[m][j][e]
    if constexpr (sizeof(T) == 4) {
#pragma unroll
        for (int s = 0; s < 2; ++s) {
            unsigned ab[4], as[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) st_tf32_split(a[4 * s + e], ab[e], as[e]);
#pragma unroll
            for (int j = 0; j < 4; ++j)
                st_mma_3xtf32(acc + 4 * j, ab, as, x[8 * s + 2 * j], x[8 * s + 2 * j + 1]);
        }
    } else {
#pragma unroll
        for (int s = 0; s < 4; ++s) {
#pragma unroll
            for (int m = 0; m < 2; ++m) {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    st_dmma(acc + 8 * m + 2 * j, a[4 * m + s], x[4 * s + j]);
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void st_frag_shares(T* red, const T acc[16])
{
    // the warp's sums into red: [group w / 2][column][q < 16]
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    T* const out = red + (w >> 1) * ST_B * 16 + (32 * (w & 1) + 2 * t) * 16 + g;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        // float [j][e]: column 8 j + (e & 1), q + 8 (e >> 1); double [m][j][e]: column
        // 8 j + e, q + 8 m
        const int col = sizeof(T) == 4 ? 8 * (i >> 2) + (i & 1) : 8 * ((i >> 1) & 3) + (i & 1);
        const int q = sizeof(T) == 4 ? 8 * ((i >> 1) & 1) : 8 * (i >> 3);
        out[col * 16 + q] = acc[i];
    }
}

template <typename T>
__device__ __forceinline__ void st_chain_wide(int C, const T* zT, int kl, int kp, T* yT,
                                              const T* inv, const T* M2, const T* Mx,
                                              const T* dsign, T* ll)
{
    // The chain's step for 1 < k <= 16, as st_chain_narrow's: P_C^T = z R+_CC^{-1} -
    // P_{C-2}^T M2 - P_{C-1}^T Mx (P_C to yT) on the tensor cores (3xTF32 in float), warp w
    // the columns 8 w .. 8 w + 8 and every q, its A values of P_{C-2} and P_{C-1} read by
    // each lane from their words (st_ll_wait; the 32 of a lane all in flight at once; with
    // the B fragments in registers too, ptxas spilled), and lane (g, t) hands on P_C's rows
    // 8 w + 2 t, + 1 at q = g, g + 8 as soon as it has them.  Needs a barrier after zT's
    // writing; none at the end.
    constexpr int NS = sizeof(T) == 4 ? 8 : 16;   // k steps
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int cw = 8 * (threadIdx.x >> 5);
    auto ok = [=](int i) { return st_frag_a<T, 32>(i).y < kp; };
    T acc[4][4] = {};                             // four sums over the k steps, then added
#pragma unroll
    for (int s3 = 0; s3 < 3; ++s3) {
        const int J = C - 3 + s3;                 // (s3 > 0: P_{C-2}, P_{C-1})
        const T* B = (s3 == 0 ? inv : s3 == 1 ? M2 : Mx) + t * ST_LD + cw + g;
        T a[32];
        if (s3 == 0) {
#pragma unroll
            for (int i = 0; i < 32; ++i) {
                const int2 rq = st_frag_a<T, 32>(i);
                a[i] = rq.y < kp ? zT[rq.x * kl + rq.y] : T(0);
            }
        } else if (J >= 0) {
            st_ll_wait<32, false>(a, ll + (long)J * ST_B * 16 + lane, [](int i) { return 32 * i; },
                                 ok);
#pragma unroll
            for (int i = 0; i < 32; ++i) a[i] = -a[i];
        } else {
            continue;
        }
#pragma unroll
        for (int s = 0; s < NS; ++s) {
            if constexpr (sizeof(T) == 4) {
                unsigned ab[4], as[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) st_tf32_split(a[4 * s + e], ab[e], as[e]);
                st_mma_3xtf32(acc[s & 3], ab, as, B[8 * s * ST_LD], B[(8 * s + 4) * ST_LD]);
            } else {
                const T bv = B[4 * s * ST_LD];
#pragma unroll
                for (int m = 0; m < 2; ++m)
                    if (m == 0 || kp > 8) st_dmma(acc[s & 3] + 2 * m, a[16 * m + s], bv);
            }
        }
    }
    // C fragments: [e] at q = g + 8 (e / 2), column 8 w + 2 t + e % 2
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int q = g + 8 * (e >> 1), col = cw + 2 * t + (e & 1);
        const T y = (acc[0][e] + acc[1][e]) + (acc[2][e] + acc[3][e]);
        if (q < kp) {
            st_ll_put<false>(ll + (long)C * ST_B * 16 + st_frag_slot<T>(col, q), y * dsign[col]);
            yT[col * kl + q] = y;
        }
    }
}

// R's tiles for the k = 1 loop (st_z_regs), two ahead in shared memory, each 64 x 64 tile
// by one bulk tensor copy (TMA, sm_90) that one thread issues.  Loads that a warp issues
// come back in order: while R's tiles came through the registers, one ahead, P_J's words
// (asked for after the next tile) came only once that tile had, 1.2 to 1.9 us into an
// iteration (0.6 where no tile was asked for after; H200, n = 5000).  Copies into shared
// memory leave the warps' loads to P alone: P_J then came 0.5 to 0.7 us after the tile
// (float), the loop ran closer to the chain (double: 0.1 to 1.4 us behind
// P_J's hand-off, against 2 to 3), and the update took 0.84 to 0.97 of the time in float
// and 0.97 to 0.99 in double, n = 2000 to 20000
// (benchmarks/results/structured-phases-NVIDIA-H200.md, "The tile ring").  The copies
// need R's tensor map (made by the host: gpu._tensor_map, a kernel parameter) and R's
// address and row stride in 16-byte multiples; else the tiles come through the registers.
// full[s]: the copy into slot s has come (a phase a use); empty[s]: every warp has read
// slot s (an arrive a warp).
struct alignas(64) StTensorMap {
    unsigned long long word[16];                     // CUtensorMap: opaque, 128 bytes
};

struct StRing {
    unsigned full, empty;                            // two mbarriers each (shared)
    unsigned dst;                                    // slot 0 (shared)
    const StTensorMap* map;                          // R's
};

#define ST_RING_WARP 7                               // issues the copies (not warp 0, which
                                                     //   looks at the flags)

template <typename T>
__device__ __forceinline__ bool st_ring_usable(const T* R, long ldr, const T* ring)
{
#if __CUDA_ARCH__ >= 900
    // the host makes R's map where R's address and row stride are 16-byte multiples and
    // the stride positive (the same test), and the ring must fit in the launch's shared
    // memory
    extern __shared__ __align__(16) unsigned char st_raw[];
    unsigned size;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(size));
    const long end = reinterpret_cast<const unsigned char*>(ring + 2 * ST_B * ST_B) - st_raw;
    return ldr > 0 && end <= (long)size &&
           ((reinterpret_cast<unsigned long long>(R) | (ldr * sizeof(T))) & 15) == 0;
#else
    return false;
#endif
}

template <typename T>
__device__ __forceinline__ StRing st_ring_init(T* ring, const StTensorMap* map)
{
    __shared__ __align__(8) unsigned long long bars[4];    // full[2], empty[2]
    StRing g;
    g.full = (unsigned)__cvta_generic_to_shared(&bars[0]);
    g.empty = (unsigned)__cvta_generic_to_shared(&bars[2]);
    g.dst = (unsigned)__cvta_generic_to_shared(ring);
    g.map = map;
#if __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(g.full + 8 * s)
                         : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;"
                         :: "r"(g.empty + 8 * s), "r"(ST_NT / 32) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    // (a pass queued as a programmatic dependent launch reads R as the pass before wrote
    // it, seen through that pass's flags by the generic proxy, and the copies read by the
    // async proxy: the issuing thread orders the two)
    if (threadIdx.x == ST_RING_WARP * 32) asm volatile("fence.proxy.async.global;" ::: "memory");
#endif
    return g;
}

__device__ __forceinline__ void st_mbar_wait(unsigned bar, int parity)
{
#if __CUDA_ARCH__ >= 900
    unsigned done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
#endif
}

template <typename T>
__device__ __forceinline__ void st_ring_issue(const StRing& g, int J, int c0, int slot)
{
#if __CUDA_ARCH__ >= 900
    // tile J (rows 64 J .., columns c0 ..; zeros past n) into slot, once every warp has
    // read what the slot held (tile J - 2).  The whole warp waits, so that it stays
    // converged: its lanes write zeros together while they wait for the chain (st_zero).
    if ((threadIdx.x >> 5) != ST_RING_WARP) return;
    if (J >= 2) st_mbar_wait(g.empty + 8 * slot, ((J - 2) >> 1) & 1);
    constexpr unsigned bytes = ST_B * ST_B * sizeof(T);
    const unsigned full = g.full + 8 * slot;
    if ((threadIdx.x & 31) == 0) {
        asm volatile("{\n\t.reg .b64 st;\n\t"
                     "mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}"
                     :: "r"(full), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                     ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(g.dst + slot * bytes), "l"(g.map), "r"(c0), "r"(J * ST_B),
                        "r"(full) : "memory");
    }
    __syncwarp();
#endif
}

template <typename T>
__device__ __forceinline__ void st_ring_take(T x[16], const StRing& g, const T* ring, int J,
                                             int slot)
{
#if __CUDA_ARCH__ >= 900
    // the thread's column of tile J (rows tid / 64 + 4u), then its warp's arrive (a
    // release: the slot's next copy follows the reads)
    st_mbar_wait(g.full + 8 * slot, (J >> 1) & 1);
    const T* s = ring + slot * ST_B * ST_B + (threadIdx.x >> 6) * ST_B + (threadIdx.x & 63);
#pragma unroll
    for (int u = 0; u < 16; ++u) x[u] = s[4 * u * ST_B];
    __syncwarp();
    if ((threadIdx.x & 31) == 0)
        asm volatile("{\n\t.reg .b64 st;\n\t"
                     "mbarrier.arrive.release.cta.shared::cta.b64 st, [%0];\n\t}"
                     :: "r"(g.empty + 8 * slot) : "memory");
#endif
}

template <int KQ, bool RING, typename T>
__device__ int st_z_regs(int C, const T* __restrict__ R, long ldr, int n, const T* P, int kp,
                         int kl, const int* flags, const int* gflags, int* zflags,
                         const T* ll, int sb, T* zT, T* red, T* zout, long ldo, int h,
                         T* Zs, long npad, bool& finite, T* ring, const StTensorMap* map)
{
    // st_solve's loop over J < C - 2 for k <= 16 (KQ = 1 for k = 1, else 16),
    // z -= (D_J P_J)^T R_JC, with no barrier per step: each thread keeps its share of the
    // sum in registers (k = 1: its column of R's tile, rows tid / 64 + 4u, times the same
    // rows of P_J; else its warp's part on the tensor cores, st_frag_*, each lane reading
    // its own values of P_J from L2), and warp 0 looks at the flags for all.  The shares
    // (four groups of rows of R's tiles) meet through shared memory (red: [group][column]
    // [q], kq values a column) only where z is needed: at each segment's start (Zs) and
    // at the end.  Returns how many tiles of zeros every warp has written (each writes its
    // rows of a tile while it waits); finite is cleared if a value of R it read is not.
    // (The G_J it waits for are summed after the block's step.)  At the end, for k = 1 the
    // shares are left in red for st_chain_narrow to sum; else zT is made z.  RING (k = 1):
    // R's tiles two ahead in ring (two 64 x 64 tiles of shared memory, by R's tensor map
    // map; see StRing), not one ahead in the registers.
    static_assert(!RING || KQ == 1, "the ring serves k = 1");
    const int tid = threadIdx.x, c = tid & 63, rt = tid >> 6, warp = tid >> 5;
    const int lane = tid & 31, c0 = C * ST_B;
    constexpr bool narrow = KQ == 1;
    const int kq = narrow ? 1 : KQ;
    __shared__ int zt_all, ready_all;
    if (tid == 0) {
        zt_all = C;
        ready_all = -1;
    }
    __syncthreads();
    T acc[KQ] = {}, x[16], nxt[16], p[16], pn[16];
    int ready = -1, zt = 0;
    bool have = false;                                 // pn holds P_J
    auto fetch_r = [&](T v[16], int J) {
        if constexpr (narrow) st_fetch<64>(v, R, ldr, n, J * ST_B, c0);
        else st_frag_fetch(v, R, ldr, n, J * ST_B, c0);
    };
    auto fetch_p = [&](T v[16], int J) {
        if constexpr (narrow) {
#pragma unroll
            for (int u = 0; u < 16; ++u) v[u] = __ldcg(P + ((long)J * ST_B + rt + 4 * u) * 4);
        } else {
            st_frag_p(v, P + (long)J * ST_B * kp, kp);
        }
    };
    auto shares = [&]() {
        if constexpr (narrow) red[rt * ST_B + c] = acc[0];
        else st_frag_shares(red, acc);
    };
    StRing g{};
    if constexpr (RING) {
        g = st_ring_init(ring, map);
        for (int J = 0; J < 2 && J + 2 < C; ++J) st_ring_issue<T>(g, J, c0, J);
    } else if (C >= 3) {
        fetch_r(nxt, 0);
    }
    for (int J = 0; J + 2 < C; ++J) {
        if constexpr (RING) {
            st_ring_take(x, g, ring, J, J & 1);
        } else {
#pragma unroll
            for (int u = 0; u < 16; ++u) x[u] = nxt[u];
        }
        finite &= st_finite<16>(x);
        if (!RING && J + 3 < C) fetch_r(nxt, J + 1);
        if (J > 0 && J % sb == 0) {
            // z at the start of segment J / sb, for the apply
            __syncthreads();
            shares();
            __syncthreads();
            T* const zs = Zs + (J / sb) * npad * kp + (long)c0 * kp;
            for (int e = tid; e < ST_B * kp; e += ST_NT) {
                const int r = e / kp, q = e % kp;
                zs[e] = q < kq ? st_z_at(zT, kl, red, kq, r, q) : T(0);
            }
            __syncthreads();
            if (tid == 0) flag_release(zflags + C, J / sb);
        }
        // P_{C-8} .. P_{C-3} (ST_LL_LOOP) come as tagged words, as P_{C-2} and P_{C-1} do
        // to the chain's step, not through their flags: for k = 1 a flag, the look at it
        // and P's load made the loop end about 3.6 us after block C - 3's step, later than
        // block C - 2's
        const bool tagged = J + ST_LL_LOOP >= C;
        if (J > ready && !tagged) {
            // wait for the chain to reach J: warp 0 looks at the flags (and hands on what
            // it finds through shared memory, release and acquire), the others write
            // their rows of a tile of the block's zeros (in the new array) while the
            // block is far from its own step
            int r;
            if (warp == 0) {
                while ((r = st_poll(flags, gflags, J, C - 2)) < J)
                    if (J + 4 < C) __nanosleep(256);
                __syncwarp();                          // (orders the lanes' acquires
                if (lane == 0) st_store_release(&ready_all, r);   //  before the release)
            } else {
                while ((r = st_load_acquire(&ready_all)) < J) {
                    if (zout && J + 4 < C && zt < C) {
                        // (called by one warp, st_zero writes that warp's rows)
                        st_zero(zout, ldo, c0, h, ST_B * zt, ST_B * (zt + 1), 1);
                        ++zt;
                    } else {
                        __nanosleep(128);
                    }
                }
            }
            ready = r;
            __syncwarp();
        }
        // P_J (from the step before where it was known ready then), and P_{J+1} ahead
        // where it is known ready now
        if (tagged && !have && narrow) {
            st_ll_wait_rows<16>(p, ll + 2 * ((long)J * ST_B + rt), 4);
            if (J == C - 3) st_chain_stamp(3);
        } else if (tagged && !have) {
            // (the lane's values i of st_chain_wide: float 8 (w / 2) + i, double
            // 16 (i / 4) + 4 (w / 2) + i % 4)
            const int grp = warp >> 1;
            const T* w = ll + (long)J * ST_B * 16 + lane + 32 * (sizeof(T) == 4 ? 8 : 4) * grp;
            st_ll_wait<8, false>(p, w,
                          [](int i) { return 32 * (sizeof(T) == 4 ? i : 16 * (i >> 2) + (i & 3)); },
                          [=](int i) { return st_frag_a<T, 8>(i).y < kp; });
        } else if (have) {
#pragma unroll
            for (int u = 0; u < 16; ++u) p[u] = pn[u];
        } else {
            fetch_p(p, J);
        }
        // (after P_J's loads, which would otherwise wait for the copy's issue; before
        // P_{J+1}'s, which the warp's arrive on empty, a release, would wait for)
        if (RING && J + 4 < C) st_ring_issue<T>(g, J + 2, c0, J & 1);
        have = J + 1 <= ready && J + 3 < C;
        if (have) fetch_p(pn, J + 1);
        if constexpr (narrow) {
#pragma unroll
            for (int u = 0; u < 16; ++u) acc[0] = fma(p[u], x[u], acc[0]);
        } else {
            st_frag_mma(acc, p, x);
        }
    }
    if (lane == 0 && warp > 0) atomicMin(&zt_all, zt);
    // the shares into red (one barrier, not the gather's three: it is on the chain's
    // path); for k = 1 st_chain_narrow sums them, and zT is made z after the chain's step
    shares();
    __syncthreads();
    if constexpr (!narrow) {
        for (int e = tid; e < ST_B * kp; e += ST_NT) {
            const int r = e / kp, q = e % kp;
            zT[r * kl + q] = st_z_at(zT, kl, red, kq, r, q);
        }
        __syncthreads();
    }
    return zt_all;
}

template <typename T>
__device__ __forceinline__ void st_growth(T g, T gmax, int* sync)
{
    // The growth test (gmax > 0; bit 4 of sync[2]): the structured update loses accuracy
    // where its small factorizations cancel, and st_solve gives each of them here: S_qq /
    // d_q for S = L L^T (d_q = L_qq^2), and for C = I + sgn X X^T = U^T U both C_rr and
    // 1 / d_r (d_r = U_rr^2).  Large S_qq / d_q: S, a sum of Gram matrices, was nearly
    // singular; large C_rr (updates): X's row r is long, and M_II R_I and Wm_I Z cancel
    // as C's factor does; large 1 / d_r (downdates): A - V V^T nears singularity in that
    // row.  Where any exceeds gmax the host redoes the update by the chain of reflectors,
    // backward stable whatever R (an apply after the solve then writes nothing).  With
    // gmax = 100 the error of what the update returns stayed within 5.4 times the chain's
    // in float32 and 3.1 in float64, in every family measured, at 0.98 to 1.01 of the
    // time without the test (H100, benchmarks/results/growth-test-*.md): its values are in
    // shared memory already.  The test it replaced (some |R[i][i]| below 1e-2 of the
    // largest entry of its row?) read R once more, each block its rows after its work
    // (the update took 1.01 to 1.17 times as long), and missed updates that cancel with
    // every pivot of R large (R = I - 0.02 triu(1), n = 1000: 2e8 and 6e8 times the error
    // of the chain in float64, k = 16 and 64), downdates back to an R with a small pivot,
    // and a V much larger than R (k = 64: 120 times).
    if (gmax > T(0) && g > gmax) atomicOr(sync + 2, 4);
}

// Whether the kernels of k up to KW keep F as M_II's closed form (float's kernels of
// k = 1): the solve writes it so and the apply reads it so (st_apply_rank1)
template <typename T, int KW>
__device__ constexpr bool st_f_closed() { return KW == 1 && sizeof(T) == 4; }

template <typename T, int KW>
__device__ int st_solve(int C, const T* __restrict__ R, long ldr, const T* __restrict__ W,
                        long wq, long wc, int n, int k, T sgn, T* P, T* F, T* Zs, T* Gs,
                        int sb, int* sync, T gmax, const StTensorMap* rmap,
                        T* zout = nullptr, long ldo = 0)
{
    // returns how many of the C tiles of zeros left of its diagonal block in zout (the
    // update's new array, or none) this block wrote while it waited for the chain
    extern __shared__ __align__(16) unsigned char st_raw[];
    const int kp = (k + 3) & ~3, kl = st_kp_ld(kp), tid = threadIdx.x;
    T* const inv = reinterpret_cast<T*>(st_raw);      // R_CC^{-1}; then S and L
    T* const tile = inv + ST_B * ST_LD;                // tiles of R (or the P_J of the
                                                       //   chain); with M2, then [C | X]
    T* const M2 = tile + ST_B * ST_LD;                 // R_{C-2,C} R_CC^{-1}
    T* const Mx = M2 + ST_B * ST_LD;                   // R_{C-1,C} R_CC^{-1}; then scratch
    T* const zT = Mx + ST_B * ST_LD;                   // z (64 x kp: row c is column c);
    T* const yT = zT + ST_B * kl;                      //   then X^T (kp x 64); rows kl
    T* const pT = yT;                                  //   apart; the P_J coming in (y is
                                                       //   made after the last of them)
    __shared__ T rdiag[ST_B], dsign[ST_B];
    const int nb = (n + ST_B - 1) / ST_B;
    const long npad = (long)nb * ST_B;
    int* const fail = sync + 1;
    int* const flags = st_sync_part(sync, nb, ST_P_FLAGS);
    int* const gflags = st_sync_part(sync, nb, ST_G_FLAGS);
    int* const zflags = st_sync_part(sync, nb, ST_Z_FLAGS);  // the last segment whose z
                                                             //   this block has written
    int* const done = st_sync_part(sync, nb, ST_DONE);       // F written (or it gave up)
    T* const ll = reinterpret_cast<T*>(st_sync_part(sync, nb, ST_COUNT) + 4);  // k <= 16:
                                                             //   P as words (st_ll_put)
    const int c0 = C * ST_B, h = min(ST_B, n - c0);
    const int tq = st_rows_per_thread(k);             // of a k x 64 product
    constexpr bool wide = KW == 64;                   // float's 64^3 products by DMMA
    __shared__ int ready;                             // the last J known to be ready (loop
    if (tid == 0) ready = -1;                         //   over J < C - 2 below)

    // Row signs: R = D R+ with R+'s diagonal positive, and R+^T R+ = R^T R.  The block
    // publishes D_C P_C, so that P_J^T R+_JC = (D_J P_J)^T R_JC takes R's tiles as they are
    // (and so does the apply), and scales column j of M_II by the sign of row j.
    // R+_CC^{-1} (the identity past n); z = V^T_C; M = R_{C-1,C} R+_CC^{-1}.
    // (every value of triu(R) and V passes st_finite once: a non-finite one sets sync[2])
    T x[16];
    st_fetch<64>(x, R, ldr, n, c0, c0);
    bool finite = st_finite<16>(x), finite_w = true;
    st_stash<64>(tile, x);
    for (int e = tid; e < ST_B * kp; e += ST_NT) {
        const int c = e % ST_B, q = e / ST_B;
        const T w = (q < k && c < h) ? W[q * wq + (c0 + c) * wc] : T(0);
        finite_w &= isfinite(w);
        zT[c * kl + q] = w;
        yT[c * kl + q] = 0;
    }
    __syncthreads();
    if (tid < ST_B) {
        if (tid >= h) tile[tid * ST_LD + tid] = 1;
        const T d = tile[tid * ST_LD + tid];
        // a zero on the diagonal: R is singular (sync[3] keeps the first, as n - j)
        if (d == T(0)) atomicMax(sync + 3, n - (c0 + tid));
        dsign[tid] = d < T(0) ? T(-1) : T(1);
        rdiag[tid] = T(1) / fabs(d);
    }
    __syncthreads();
    for (int e = tid; e < ST_B * ST_B; e += ST_NT)
        tile[(e / ST_B) * ST_LD + e % ST_B] *= dsign[e / ST_B];
    __syncthreads();
    st_invert(inv, tile, rdiag, Mx);
    for (int J = max(0, C - 2); J < C; ++J) {
        st_fetch<64>(x, R, ldr, n, J * ST_B, c0);
        finite &= st_finite<16>(x);
        __syncthreads();
        st_stash<64>(tile, x, true);
        __syncthreads();
        st_product(J == C - 1 ? Mx : M2, ST_LD, 1, tile, ST_LD, inv, ST_LD, ST_B, ST_B, ST_B,
                   4, T(1), false);
    }

    st_stamp(1);
    // S = I + sgn sum_{J<C} G_J, G_J = P_J^T P_J (kp x kp), which block J publishes after its
    // step of the chain (gflags): each thread sums its share as they come
    T g[16] = {};

    // (for k <= 16, st_z_regs above instead of this loop)
    // z -= (D_J P_J)^T R_JC for J < C - 2, the tiles of R one ahead in registers, G_{J-1}
    // read before the product and added after it, and in double P_{J+1} read ahead
    // where it is known ready.  This loop, not the hand-off, bounds the chain for k <= 16
    // (n = 10000, a timestamp at each part of every step of it, which made the update up
    // to a third slower, so the parts are rough): a step of it takes 3.1 to 4.3 us
    // (float, k = 1 and 16; 3.7 in double), longer than a step of the chain
    // (median 2.7 and 3.5), so the blocks run 3.4 to 4.8 us (median) behind the block
    // the chain is at and come to their own step late.  Of a step, 1.5 to 1.9 us pass
    // between stashing R's tile and the barrier after the look at the flags even when
    // the flags were set long before; the rest is the product (0.9 to 2 us) and P_J's
    // load (0.3 to 0.8).  What did not shorten it (A/B on an H100): relaxed loads for
    // the look (no L1 invalidation), issuing the next tile's loads after it, backing off
    // between looks, asking L2 for the tiles of R four ahead, and reading P_{J+1} ahead
    // (within 3 percent for k <= 16, or slower); but in double the read-ahead made
    // k = 64 (a P_J of 32 KB) 5 to 10 percent faster at n = 5000 to 20000.  Nor did
    // taking two ready P_J in one step where a block is behind (a second tile of R and
    // of P in shared memory: one look at the flags, one round trip and one set of
    // barriers for both; k <= 16 in float, 32 in double): the same result bit for bit,
    // float within 3 percent, double up to 9 percent slower (n = 5000 to 20000).  Nor
    // did bringing R's tiles into shared memory by cp.async, two ahead in a ring of three
    // (the same result bit for bit; k <= 16 0 to 6 percent slower, k = 64 22 with one
    // block per SM).  Leaving the product, or R's loads, or both out of this loop
    // altogether (wrong values, timing only) took only 3 to 16 percent off the update
    // (float and double, n = 5000 and 10000, k = 1 and 16): the loop's skeleton (its
    // look at the flags, P_J's load and three barriers) and the chain's own step are
    // most of it.  So the blocks' lag behind the chain is not what the chain waits on,
    // or not alone.
    constexpr bool ahead = sizeof(T) == 8;
    auto z_at = [&](int s) { return Zs + s * npad * kp + (long)c0 * kp; };   // segment s
    T nxt[16];
    int4 pv[sizeof(T)];
    bool have = false;                                 // pv holds P_J
    int zt = 0;                                        // tiles of zeros written
    constexpr bool narrow = KW == 1;                   // k = 1 (the kernels named ..1_)
    constexpr bool regs = KW <= 16;                    // k <= 16 (..1_ and ..16_)
    if constexpr (narrow) {
        // the ring (StRing) in the shared memory past yT that k = 64 takes for zT and yT,
        // 128-byte aligned for the bulk tensor copy
        const unsigned at = (unsigned)__cvta_generic_to_shared(yT + ST_B * kl);
        T* const ring = reinterpret_cast<T*>(reinterpret_cast<char*>(yT + ST_B * kl) +
                                             (((at + 127) & ~127u) - at));
        zt = st_ring_usable(R, ldr, ring)
                 ? st_z_regs<KW, true>(C, R, ldr, n, P, kp, kl, flags, gflags, zflags, ll, sb,
                                       zT, tile, zout, ldo, h, Zs, npad, finite, ring, rmap)
                 : st_z_regs<KW, false>(C, R, ldr, n, P, kp, kl, flags, gflags, zflags, ll, sb,
                                        zT, tile, zout, ldo, h, Zs, npad, finite, ring, rmap);
    } else if constexpr (regs) {
        zt = st_z_regs<KW, false>(C, R, ldr, n, P, kp, kl, flags, gflags, zflags, ll, sb, zT,
                                  tile, zout, ldo, h, Zs, npad, finite, (T*)nullptr, rmap);
    }
    if (C >= 3 && !regs) st_fetch<64>(nxt, R, ldr, n, 0, c0);
    for (int J = 0; !regs && J + 2 < C; ++J) {
        const bool wait = J > ready;   // (read before the barrier: written only after it)
        __syncthreads();
        st_stash<64>(tile, nxt);
        finite &= st_finite<16>(nxt);
        if (J + 3 < C) st_fetch<64>(nxt, R, ldr, n, (J + 1) * ST_B, c0);
        if (J > 0 && J % sb == 0)
            st_copy_out(z_at(J / sb), zT, ST_B * kp, kp, kl);
        if (wait) {
            // warp 0 waits for the chain to reach J (and may find more ready); meanwhile
            // the others write a tile of this block's zeros (in the new array): blocks
            // that would only wait write them, spread over the chain (in double, by the
            // time the chain ended the apply had 1296 jobs of zeros to run at n = 10000,
            // before 800 of its products).  Close to its step the block only waits.
            const bool zero = zout && J + 4 < C;       // (so zt <= J < C)
            if (tid < 32) {
                const int r = st_ready(flags, gflags, J, C - 2);
                if (tid == 0) ready = r;
            } else if (zero) {
                st_zero(zout, ldo, c0, h, ST_B * zt, ST_B * (zt + 1), 1);
            }
            zt += zero;
        }
        __syncthreads();
        if (tid == 0 && J > 0 && J % sb == 0) flag_release(zflags + C, J / sb);
        if (!have) st_fetch_vec<sizeof(T)>(pv, P + (long)J * ST_B * kp, ST_B * kp);
        st_stash_padded<sizeof(T)>(pT, pv, ST_B * kp, kp, kl);
        have = ahead && J + 1 <= ready && J + 3 < C;
        if (have) st_fetch_vec<sizeof(T)>(pv, P + (long)(J + 1) * ST_B * kp, ST_B * kp);
        int4 gv[sizeof(T)];
        if (J >= 1) st_gram_fetch<T>(gv, Gs + (long)(J - 1) * kp * kp, kp);
        __syncthreads();
        st_product<wide>(zT, 1, kl, pT, kl, tile, ST_LD, ST_B, k, ST_B, tq, T(-1), true);
        if (J >= 1) st_gram_add(g, gv);
    }
    __syncthreads();
    st_stamp(2);
    const bool zs_here = C >= 3 && (C - 2) % sb == 0;  // z at C - 2 starts a segment

    // the chain: P_C = z R+_CC^{-1} - P_{C-2}^T M2 - P_{C-1}^T Mx (M2 = R+_{C-2,C}
    // R+_CC^{-1}, Mx = R+_{C-1,C} R+_CC^{-1}), published as D_C P_C.  P_{C-2}'s term is
    // taken as soon as it comes, so that what is left after P_{C-1} is one product
    if (narrow)
        st_chain_narrow(C, zT, tile, yT, kl, inv, M2, Mx, dsign, ll);
    else if (regs)
        st_chain_wide(C, zT, kl, kp, yT, inv, M2, Mx, dsign, ll);
    else
        st_product<wide>(yT, 1, kl, zT, kl, inv, ST_LD, ST_B, k, ST_B, tq, T(1), false);
    // for k = 64 the last product (by DMMA) writes D_C P_C to P itself, from its registers
    // (no pass through shared memory and one barrier fewer before the flag)
    const bool direct = k == ST_B && C >= 1 && !regs;
    for (int J = max(0, C - 2); !regs && J < C; ++J) {
        if (tid == 0) flag_wait(flags + J);
        __syncthreads();
        st_copy_in(tile, P + (long)J * ST_B * kp, ST_B * kp, kp, kl);
        __syncthreads();
        st_product<wide>(yT, 1, kl, tile, kl, J == C - 1 ? Mx : M2, ST_LD, ST_B, k, ST_B, tq,
                         T(-1), true, 0, 1, direct && J == C - 1 ? P + (long)c0 * kp : nullptr,
                         dsign);
    }
    if (!direct) {
        __syncthreads();
        for (int e = 4 * tid; e < ST_B * kp; e += 4 * ST_NT) {   // (four values a move: kp
            const int r = e / kp;                                  //   and kl are multiples
            T v[4];                                                //   of 4)
            lds4(yT + r * kl + e % kp, v);
#pragma unroll
            for (int u = 0; u < 4; ++u) v[u] *= dsign[r];
            st4(P + (long)c0 * kp + e, v);
        }
    }
    if (narrow && tid < ST_B) zT[tid * kl] = st_z_row(zT, tile, tid);
    __syncthreads();
    if (tid == 0) flag_release(flags + C);
    st_stamp(3);
    if (zs_here) {                     // (zT is z again here, for k = 1 too)
        st_copy_out(z_at((C - 2) / sb), zT, ST_B * kp, kp, kl);
        __syncthreads();
    }
    if (tid == 0 && zs_here) flag_release(zflags + C, (C - 2) / sb);
    if (!finite || !finite_w) atomicOr(sync + 2, (finite ? 0 : 1) | (finite_w ? 0 : 2));

    // off the chain: G_C for the blocks after this one, the last terms of S, and z at the
    // segment that starts here
    st_product<wide>(Gs + (long)C * kp * kp, kp, 1, yT, kl, yT, kl, ST_B, kp, kp, tq, T(1), false);
    __syncthreads();
    if (tid == 0) flag_release(gflags + C);
    st_stamp(4);
    // the G_J the loop's looks at the flags did not cover, a thread each: G_{C-3} ..
    // G_{C-1}, and for k <= 16 G_{C-9} .. G_{C-1} (st_z_regs took P_{C-8} .. P_{C-3} with
    // no look at the flags, which is where it saw the G_{J-1} before them)
    const int unseen = regs ? ST_LL_LOOP + 1 : 3;
    if (tid < unseen && C - 1 - tid >= 0) flag_wait(gflags + C - 1 - tid);
    __syncthreads();
    if constexpr (regs)
        st_gram_sum(g, Gs, kp, C, M2);
    else
        for (int J = max(0, C - 3); J < C; ++J)
            st_gram_add(g, Gs + (long)J * kp * kp, kp);
    // a segment that starts at C - 1 or C: the terms of the blocks of the chain before it
    // (P_J through Mx, as it is free now)
    const int sl = C / sb;
    if (sl >= 1 && sl * sb > C - 2) {
        for (int J = max(0, C - 2); J < sl * sb; ++J) {
            st_fetch<64>(x, R, ldr, n, J * ST_B, c0);
            __syncthreads();
            st_stash<64>(tile, x);
            st_copy_in(Mx, P + (long)J * ST_B * kp, ST_B * kp, kp, kl);
            __syncthreads();
            st_product<wide>(zT, 1, kl, Mx, kl, tile, ST_LD, ST_B, k, ST_B, tq, T(-1), true);
        }
        __syncthreads();
        st_copy_out(z_at(sl), zT, ST_B * kp, kp, kl);
        __syncthreads();
        if (tid == 0) flag_release(zflags + C, sl);
    }
    __syncthreads();
    T* const S = inv;
    {
        constexpr int per = 16 / sizeof(T);
#pragma unroll
        for (int u = 0; u < 16; ++u) {
            const int e = st_gram_chunk(u / per) * per + u % per, q = e / kp, r = e % kp;
            if (e < kp * kp && q < k && r < k) S[e] = T(q == r) + sgn * g[u];
        }
    }
    __syncthreads();
    const T s_qq = tid < k ? S[tid * kp + tid] : T(1);     // (for the growth test)
    // S = L L^T, L = Us^T: Us^T Us in the upper triangle, then L in the lower one where
    // the solves with L below go row by row
    const bool by_inverse = k > 32;
    const bool spd = st_cholesky(S, k, kp, k, Mx) < 0;
    if (spd && tid < k) st_growth(s_qq * Mx[tid] * Mx[tid], gmax, sync);   // S_qq / d_q
    for (int e = tid; spd && !by_inverse && e < k * k; e += ST_NT)
        if (e % k < e / k) S[e / k * kp + e % k] = S[e % k * kp + e / k];
    __syncthreads();
    if (!spd) {
        // S is not positive definite: a block before this one broke down (and says where)
        if (tid == 0) {
            atomicMax(fail, n - c0);
            flag_release(done + C);
        }
        return zt;
    }

    // The triangular solves with L, X = P_C L^{-T} here and Wm = sgn (U^{-T} X) L^{-1}
    // below: row by row (four lanes a row, k dependent steps) for k <= 32, and for larger
    // k as products with Us^{-1} (Us in tile, the identity past k; inverted as R_CC was).
    // On an H100 at k = 64 they took 26 and 47 us row by row, 40 percent of the block's
    // work after its step of the chain, and 17 (the inverse included) and 6 us as
    // products; at k = 16 the update was 2 to 3 percent faster row by row.
    T* const XT = zT;                                  // X^T, rows of 64 values
    T* const UsT = yT;                                 // Us^{-T} (kp x kp), after X
    if (by_inverse) {
        for (int e = tid; e < ST_B * ST_B; e += ST_NT) {
            const int r = e / ST_B, c = e % ST_B;
            tile[r * ST_LD + c] = r < k && c < k ? (c >= r ? S[r * kp + c] : T(0)) : T(r == c);
        }
        if (tid < ST_B) rdiag[tid] = tid < k ? T(1) / S[tid * kp + tid] : T(1);
        __syncthreads();
        st_invert(M2, tile, rdiag, Mx);
        st_product<wide>(XT, 1, ST_B, yT, 1, M2, ST_LD, kp, ST_B, kp, 4, T(1), false, 0, kl);
        __syncthreads();
        for (int e = tid; e < kp * kp; e += ST_NT) {
            const int l = e / kp, q = e % kp;
            UsT[l * kl + q] = M2[q * ST_LD + l];
        }
    } else {
        const int r = tid >> 2, part = tid & 3;
        for (int q = 0; q < k; ++q) {
            T s = 0;
            for (int i = part; i < q; i += 4) s = fma(yT[r * kl + i], S[q * kp + i], s);
            s += __shfl_xor_sync(0xffffffff, s, 1);
            s += __shfl_xor_sync(0xffffffff, s, 2);
            const T v = (yT[r * kl + q] - s) / S[q * kp + q];
            __syncwarp();
            if (part == 0) yT[r * kl + q] = v;
            __syncwarp();
        }
        __syncthreads();
        for (int e = tid; e < ST_B * kp; e += ST_NT) {
            const int c = e % ST_B, q = e / ST_B;
            XT[q * ST_B + c] = yT[c * kl + q];
        }
    }
    __syncthreads();
    st_stamp(7);
    // [C | X] with C = I + sgn X X^T, then C = U^T U carrying X to U^{-T} X
    const int la = ST_B + kp;
    T* const A = tile;                                 // (64 x la: tile and M2)
    int j;
    T c_rr = T(1);                                     // (for the growth test)
    T r1x = 0, r1q = 0;                                // k = 1: x_r, 1 / sqrt(t_r t_{r-1})
    if (k == 1) {
        if (tid < ST_B) c_rr = fma(sgn * XT[tid], XT[tid], T(1));
        j = st_cholesky_rank1(A, la, XT, sgn, Mx);
        if (st_f_closed<T, KW>() && tid < ST_B) {
            r1x = XT[tid];
            r1q = Mx[tid];
        }
    } else {
        st_product<wide>(A, la, 1, XT, ST_B, XT, ST_B, k, ST_B, ST_B, 4, sgn, false);
        for (int e = tid; e < ST_B * kp; e += ST_NT) {
            const int r = e / kp, q = e % kp;
            A[r * la + ST_B + q] = XT[q * ST_B + r];
        }
        __syncthreads();
        if (tid < ST_B) c_rr = A[tid * la + tid] += T(1);
        // only the block's h rows: past n, X's rows are zero (so are z's and R_CC^{-1}'s
        // off the block of h), so C's rows there are those of I, and no step before h
        // changes them.  The last block (h = n % 64, where that is not 0) so publishes
        // its F 21 to 41 us sooner (H200, n = 5000, float, k = 16 and 64); the update
        // took the same time (0.997 to 1.006 at n = 5000 to 20000, A/B), its end bound
        // by the apply's last jobs, not by that F
        j = st_cholesky(A, h, la, la, Mx);
    }
    if (j < 0 && tid < ST_B) {
        // C_rr and 1 / d_r (st_cholesky leaves d_r^{-1/2} in Mx, st_cholesky_rank1
        // d_r^{1/2} after the first 64 values)
        const T root = k == 1 ? T(1) / Mx[ST_B + tid] : tid < h ? Mx[tid] : T(1);
        st_growth(fmax(c_rr, root * root), gmax, sync);
    }
    if (j >= 0) {
        if (tid == 0) {
            if (j < h) atomicMax(fail, n - (c0 + j));
            flag_release(done + C);
        }
        return zt;
    }
    // Wm = sgn (U^{-T} X) L^{-1}: into zT (rows kl apart), or in place row by row from
    // the last column
    T* const Wm = by_inverse ? zT : A + ST_B;
    const int wl = by_inverse ? kl : la;
    if (by_inverse) {
        st_product<wide>(Wm, kl, 1, A + ST_B, 1, UsT, kl, kp, ST_B, kp, 4, sgn, false, 0, la);
    } else {
        const int r = tid >> 2, part = tid & 3;
        T* const w = A + r * la + ST_B;
        for (int q = k - 1; q >= 0; --q) {
            T s = 0;
            for (int i = q + 1 + part; i < k; i += 4) s = fma(w[i], S[i * kp + q], s);
            s += __shfl_xor_sync(0xffffffff, s, 1);
            s += __shfl_xor_sync(0xffffffff, s, 2);
            const T v = (sgn * w[q] - s) / S[q * kp + q];
            __syncwarp();
            if (part == 0) w[q] = v;
            __syncwarp();
        }
    }
    __syncthreads();
    // F per 32 rows: F[j][r] = U[r][j] d_j (zero below the diagonal; M_II R+_I = (M_II
    // D_I) R_I), F[32 + q][r] = Wm[r][q].  For k = 1, U's closed form instead
    // (st_cholesky_rank1: U[r][j] = a_r x_j for j > r, a_r = sgn x_r / sqrt(t_r t_{r-1})):
    // rows U[r][r] d_r, a_r, x_r d_r and Wm[r][0], which st_apply_rank1 takes
    if constexpr (st_f_closed<T, KW>()) {
        if (tid < ST_B) {
            T* const out = F + (2L * C + tid / 32) * (32 + kp) * 32 + tid % 32;
            out[0] = A[tid * la + tid] * dsign[tid];
            out[32] = sgn * r1x * r1q;
            out[64] = r1x * dsign[tid];
            out[96] = Wm[tid * wl];
        }
    }
    for (int b = 0; b < 2 && !st_f_closed<T, KW>(); ++b) {
        T* const out = F + (2L * C + b) * (32 + kp) * 32;
        for (int e = tid; e < (32 + kp) * 32; e += ST_NT) {
            const int jj = e / 32, r = e % 32, row = 32 * b + r;
            out[e] = jj < 32 ? (jj >= r ? A[row * la + 32 * b + jj] * dsign[32 * b + jj] : T(0))
                             : Wm[row * wl + jj - 32];
        }
    }
    __syncthreads();
    if (tid == 0) flag_release(done + C);
    st_stamp(5);
    return zt;
}

// The apply's output product in float: for k > 1 on the tensor cores in 3xTF32, F split
// once as it is stashed (st_stash_split) and Z's rows padded to a multiple of 8 (the
// mma's k); for k = 1 from M_II's closed form (st_apply_rank1).  On an H200 (float32,
// n = 10000, the cycles of each part of the apply's loop, profile_structured.py --parts)
// the product took 1.10 us a group of 32 rows in 3xTF32 against 1.45 by FMA for k = 16
// and 1.99 against 2.76 for k = 64; for k = 1 (k <= 4 in 3xTF32) the update took 1.06
// times as long as by FMA (A/B; the chain's last P 18 us later), and FMA it kept until
// the closed form.  Its Z update for k > 4 goes by the tensor cores too
// (st_apply_z_mma), with warps that split a part of P_I each, not all of it: Z took
// 0.68 us a group for k = 16 (0.91 before) and 2.5 for k = 64 (2.6), and the update 0.92
// to 0.99 of the time (A/B, k = 7 to 256, n = 5000 to 20000).  The choice of product is
// a template argument of st_apply where the kernel's k allows (MMA: 0 FMA, 1 mma, -1 by
// k at run time), so that the kernels of the one launch hold the code of one product
// only (with both, ptxas spilled 40 to 132 bytes in them); the one launch and the apply
// after the solve choose alike, so that both give the same result bit for bit.
template <int MMA>
__device__ __forceinline__ bool st_apply_mma(int k) { return MMA < 0 ? k > 1 : MMA == 1; }

template <typename T>
__device__ __forceinline__ int st_f_ld(bool mma)
{
    // leading dimension of F in the apply's shared memory: rows 8 banks apart, so that
    // the loads of A of a DMMA (double) or mma (float, F split) do not collide; float's
    // FMA product reads F's rows whole
    return sizeof(T) == 8 ? 36 : mma ? 40 : 32;
}

template <int N>
__device__ __forceinline__ void st_stash_split(float* big, float* small, const int4 v[N],
                                               int count)
{
    // F's values that st_fetch_vec read (rows of 32) split for 3xTF32 (st_tf32_split)
    // once here, not by each warp of the product that reads them: the big parts into
    // big, the small into small, rows st_f_ld apart
#pragma unroll
    for (int u = 0; u < N; ++u) {
        const int e = (threadIdx.x + u * ST_NT) * 4;
        if (e < count) {
            const float4 x = *reinterpret_cast<const float4*>(&v[u]);
            unsigned b[4], s[4];
            st_tf32_split(x.x, b[0], s[0]);
            st_tf32_split(x.y, b[1], s[1]);
            st_tf32_split(x.z, b[2], s[2]);
            st_tf32_split(x.w, b[3], s[3]);
            const int at = (e / 32) * st_f_ld<float>(true) + e % 32;
            *reinterpret_cast<uint4*>(big + at) = make_uint4(b[0], b[1], b[2], b[3]);
            *reinterpret_cast<uint4*>(small + at) = make_uint4(s[0], s[1], s[2], s[3]);
        }
    }
}

template <typename T>
__device__ __forceinline__ void st_apply_z4(T* Z, const T* Pi, const T* B, int k, int czero)
{
    // The apply's Z -= P_I^T R_I for k <= 4: Z[q][c] -= sum_{l < 32} Pi[l][q] B[l][c] for
    // q < k, c < 64 (Pi's rows 4 values apart, B's and Z's ST_LD), and Z[q][c] = 0 for
    // c < czero.  By warps 0 to 3: column 16 w + lane % 16, rows l of one half of the sum
    // (lane / 16: a half-warp loads 16 neighbouring values of one row of B), the halves
    // added by one shuffle.  Through st_product (the sum split over 8 lanes, three rounds
    // of shuffles, the split's index arithmetic at run time) this product took about a
    // quarter of the apply's warp time for k = 1 (Nsight Compute's stall samples, H200).
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (w >= 4) return;
    const int c = 16 * w + (lane & 15), l0 = 16 * (lane >> 4);
    T acc[4] = {};
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        T p[4];
        lds4(Pi + (l0 + i) * 4, p);
        const T b = B[(l0 + i) * ST_LD + c];
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[q] = fma(p[q], b, acc[q]);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        acc[q] += __shfl_xor_sync(0xffffffff, acc[q], 16);
        if (lane < 16 && q < k) Z[q * ST_LD + c] = c < czero ? T(0) : Z[q * ST_LD + c] - acc[q];
    }
}

template <int MT>
__device__ __forceinline__ void st_apply_z_mma(float* Z, const float* Pi, int pld, const float* B,
                                               int k, int czero)
{
    // The apply's Z -= P_I^T R_I in float for k > 4 on the tensor cores (3xTF32, mma
    // m16n8k8): Z[q][c] -= sum_{l < 32} Pi[l][q] B[l][c] for q < k, c < 64 (Pi's rows pld
    // apart, B's and Z's ST_LD), and Z[q][c] = 0 for c < czero.  MT tiles of 16 rows
    // (k <= 16 MT; MT = 1, 2 or 4); warp w takes tile w / (8 / MT) and MT tiles of 8 columns,
    // two at a time (registers), so that each warp splits a quarter of P_I's values at
    // most (st_product_tf32, each warp 8 columns by every row, splits all of them)
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    constexpr int per = 8 / MT, NT = MT < 2 ? MT : 2;   // warps a tile of rows; tiles at once
    const int q0 = 16 * (w / per);
#pragma unroll 1
    for (int cw = 8 * MT * (w % per); cw < 8 * MT * (w % per + 1); cw += 8 * NT) {
        float acc[NT][4] = {}, low[NT][4] = {};
#pragma unroll 2     // (fully unrolled, ptxas spilled 124 bytes in the kernels for k > 16)
        for (int l = 0; l < 32; l += 8) {
            unsigned ab[4], as[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int q = q0 + g + 8 * (e & 1), ll = l + t + 4 * (e >> 1);
                st_tf32_split(q < k ? Pi[ll * pld + q] : 0.f, ab[e], as[e]);
            }
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const float* b = B + (l + t) * ST_LD + cw + 8 * j + g;
                st_mma_3xtf32_sums(acc[j], low[j], ab, as, b[0], b[4 * ST_LD]);
            }
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int q = q0 + g + 8 * (e >> 1), c = cw + 8 * j + 2 * t + (e & 1);
                float* const z = Z + q * ST_LD + c;
                if (q < k) *z = c < czero ? 0.f : *z - (acc[j][e] + low[j][e]);
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void st_store_tiles(T* out, long ldo, int r0, int r_end, int c0,
                                               int n, const T v[2][4])
{
    // st_apply_out's outputs from the tensor cores' layout (warp w: rows r0 + 16 (w / 4)
    // + g (+ 8), columns c0 + 16 (w % 4) + 8 j + 2 t (+ 1) in v[j]), those before r_end
    // and n: a tile's two neighbouring columns one store where the row's address allows,
    // so that each store of a warp fills whole 32-byte sectors
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const bool vec = ((reinterpret_cast<size_t>(out) | (size_t)ldo * sizeof(T))
                      & (2 * sizeof(T) - 1)) == 0;
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
        const int r = r0 + 16 * (w / 4) + g + 8 * (e >> 1);
        if (r >= r_end) continue;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int c = c0 + 16 * (w % 4) + 8 * j + 2 * t;
            T* o = out + (long)r * ldo + c;
            if (vec && c + 1 < n) {
                if constexpr (sizeof(T) == 4)
                    *reinterpret_cast<float2*>(o) = make_float2(v[j][e], v[j][e + 1]);
                else
                    *reinterpret_cast<double2*>(o) = make_double2(v[j][e], v[j][e + 1]);
            } else {
                if (c < n) o[0] = v[j][e];
                if (c + 1 < n) o[1] = v[j][e + 1];
            }
        }
    }
}

template <typename T>
__device__ __forceinline__ void st_apply_out(T* out, long ldo, int r0, int r_end, int c0,
                                             int n, const T* Ft, int fld, const T* BZ, int kz,
                                             bool mma)
{
    // out rows r0 .. r0 + 32 (those before r_end), columns c0 .. c0 + 64 (those before n)
    // = sum_l Ft[l][q] BZ[l][c], l < 32 + kz (Ft's rows fld apart, BZ's ST_LD; kz: Z's
    // rows, k rounded up to 4, or to 8 for the mma, the rows past k zero); Ft[l][q] = 0
    // for l < q (M_II is upper triangular), so the rows of each thread's or warp's outputs
    // start its sum there
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    // on the tensor cores: warp w rows 16 (w / 4) .. + 16, columns 16 (w % 4) .. + 16, as
    // two tiles of 8 columns
    const int g = lane >> 2, t = lane & 3, wr = 16 * (w / 4), wc = 16 * (w % 4);
    if (sizeof(T) == 4 && !mma) {
        // float by FMA: warp w rows 8 (w / 2) .. + 8, columns 32 (w % 2) .. + 32, each
        // lane 2 rows by 4 columns (8 lanes across, so that a row of BZ is one load)
        const int q0 = 8 * (w / 2) + 2 * (lane / 8), cq = 32 * (w % 2) + 4 * (lane % 8);
        const int l0 = 8 * (w / 2);
        T acc[4][4] = {};
        st_mac<2>(acc, Ft + l0 * fld, fld, BZ + l0 * ST_LD, ST_LD, 32 + kz - l0, q0, cq);
        // four neighbouring columns a store where the row's address allows (whole 16-byte
        // pieces: a row of eight lanes' stores fills its sectors)
        const bool vec = ((reinterpret_cast<size_t>(out) | (size_t)ldo * 4) & 15) == 0
                         && c0 + cq + 3 < n;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = r0 + q0 + i;
            if (r < r_end) {
                T* o = out + (long)r * ldo + c0 + cq;
                if (vec)
                    *reinterpret_cast<float4*>(o) =
                        make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
                else
#pragma unroll
                    for (int j = 0; j < 4; ++j)
                        if (c0 + cq + j < n) o[j] = acc[i][j];
            }
        }
    } else if constexpr (sizeof(T) == 4) {
        // float in 3xTF32 (mma m16n8k8): Ft is F split (st_stash_split), its big parts
        // then its small, (32 + kz) rows each
        const float* const Fs = Ft + (32 + kz) * fld;
        float acc[2][4] = {}, low[2][4] = {};
#pragma unroll 2
        for (int l = wr; l < 32 + kz; l += 8) {
            unsigned ab[4], as[4];
            const int f = (l + t) * fld + wr + g;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int at = f + 8 * (e & 1) + 4 * fld * (e >> 1);
                ab[e] = __float_as_uint(Ft[at]);
                as[e] = __float_as_uint(Fs[at]);
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                const float* bz = BZ + (l + t) * ST_LD + wc + 8 * j + g;
                st_mma_3xtf32_sums(acc[j], low[j], ab, as, bz[0], bz[4 * ST_LD]);
            }
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[j][e] += low[j][e];
        }
        st_store_tiles(out, ldo, r0, r_end, c0, n, acc);
    } else {
        // double: DMMA m16n8k4
        double acc[2][4] = {};
#pragma unroll 2
        for (int l = wr; l < 32 + kz; l += 4) {
            const double* f = Ft + (l + t) * fld + wr + g;
            const double* bz = BZ + (l + t) * ST_LD + wc + g;
            const double a0 = f[0], a1 = f[8];
#pragma unroll
            for (int j = 0; j < 2; ++j) st_dmma16(acc[j], a0, a1, bz[8 * j]);
        }
        st_store_tiles(out, ldo, r0, r_end, c0, n, acc);
    }
}

template <typename T>
__device__ __forceinline__ void st_apply_rank1(T* out, long ldo, int r0, int r_end, int c0,
                                               int n, T* Ft, int fld, const T* B, T* Z,
                                               const T* Pi, int pld, int czero)
{
    // The apply's Z -= P_I^T R_I and output for k = 1 (float), from M_II's closed form
    // (Ft's rows d_r, a_r, y_j, w_r: the solve's F for k = 1): out row r = d_r B[r] + a_r
    // sum_{j > r} y_j B[j] + w_r Z[0], a suffix sum down the 32 rows instead of a
    // triangular product, and Z[0][c] = 0 for c < czero.  Thread: column c = tid % 64,
    // rows 8 q .. 8 q + 8 (q = tid / 64), with the sums of its rows of both kinds
    // (suffix and Z's) handed to the threads of its column through Ft's rows 4 .. 20
    // (unused for k = 1), one barrier for both: F's load is 4 rows, not 36, and a
    // group's work 4 multiply-adds a value of R.  By Z's product (st_apply_z4, its own
    // barrier) and the triangular one (st_apply_out) a group of 32 rows took 0.49 and
    // 1.01 us (H200, n = 10000: structured-phases-NVIDIA-H200.md); with this the update
    // took 0.89, 0.93, 0.95 and 0.84 of the time at n = 2000, 5000, 10000 and 20000, its
    // error 0.84 to 0.89 of before (H200, ab_builds.py, 2 rounds of 7).  In double
    // (without the Z product's fusion) the closed form took 1.007 to 1.018 of the time
    // of the DMMA product (n = 5000 to 20000), which double keeps
    // (benchmarks/results/rank1-apply-NVIDIA-H200.md)
    const int c = threadIdx.x & 63, q = threadIdx.x >> 6;
    const T *const d = Ft + 8 * q, *const a = d + fld, *const y = a + fld, *const w = y + fld;
    T* const tot = Ft + 4 * fld;                      // (2 x 4 x 64 values, fld = 32)
    T b[8], below = 0, zsum = 0, suffix[8];
#pragma unroll
    for (int i = 7; i >= 0; --i) {
        b[i] = B[(8 * q + i) * ST_LD + c];
        suffix[i] = below;
        below = fma(y[i], b[i], below);
        zsum = fma(Pi[(8 * q + i) * pld], b[i], zsum);
    }
    T z = Z[c];
    tot[q * 64 + c] = below;
    tot[256 + q * 64 + c] = zsum;
    __syncthreads();
    below = 0;
    for (int u = q + 1; u < 4; ++u) below += tot[u * 64 + c];
    zsum = (tot[256 + c] + tot[256 + 64 + c]) + (tot[256 + 128 + c] + tot[256 + 192 + c]);
    z = c < czero ? T(0) : z - zsum;
    if (q == 0) Z[c] = z;
    if (c0 + c >= n) return;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = r0 + 8 * q + i;
        if (r < r_end)
            out[(long)r * ldo + c0 + c] = fma(d[i], b[i], fma(a[i], suffix[i] + below, w[i] * z));
    }
}

template <typename T, int MMA = -1, int KW = 64>
__device__ void st_apply(int4 job, bool follow, const T* R, long ldr, T* out, long ldo,
                         const T* __restrict__ W, long wq, long wc, int n, int k, const T* P,
                         const T* F, const T* Zs, int check, const int* sync)
{
    // job = (tile t of 64 columns, segment s or -1, rows r_begin .. r_end); s = -1: rows
    // below the diagonal block, zeros.  follow: the solve is still running (the same
    // launch), so wait for the segment's z and each block's F and P (flags); out is then
    // not R, and is written whatever the solve finds.  Otherwise the solve is over, and
    // nothing is written if it failed (or its growth test did).
    extern __shared__ __align__(16) unsigned char st_raw[];
    const volatile int* vs = sync;
    if (!follow && (vs[1] != 0 || vs[3] != 0 || (vs[2] & 4) || (check && vs[2] != 0)))
        return;
    const int kp = (k + 3) & ~3, tid = threadIdx.x;
    const int nb = (n + ST_B - 1) / ST_B;
    const int* const zflags = st_sync_part(sync, nb, ST_Z_FLAGS);
    const int* const done = st_sync_part(sync, nb, ST_DONE);
    const int c0 = job.x * ST_B, seg = job.y, r_begin = job.z, r_end = job.w;
    if (seg < 0) {
        st_zero(out, ldo, r_begin, r_end - r_begin, c0, min(c0 + ST_B, n));
        return;
    }
    // R_I (32 x 64), then Z (kz x 64), rows ST_LD apart; F of the 32 rows, (32 + kp) x 32
    // (float: split, its big parts then its small, (32 + kz) x 32 each), rows fld apart;
    // P_I (32 x kp), rows pld apart
    const bool split = sizeof(T) == 4 && st_apply_mma<MMA>(k);
    const int kz = split ? (kp + 7) & ~7 : kp;        // (the rows past kp zero)
    const int fld = st_f_ld<T>(split), pld = st_kp_ld(kp);
    T* const B = reinterpret_cast<T*>(st_raw);
    T* const Z = B + 32 * ST_LD;
    T* const Ft = Z + kz * ST_LD;
    T* const Fs = Ft + (32 + kz) * fld;               // (split: F's small parts)
    T* const Pi = split ? Fs + (32 + kz) * fld : Fs;
    const long npad = (long)nb * ST_B;
    const int tq = st_rows_per_thread(k);

    // follow: warp 0 keeps in `ready` the last block from r_begin's on whose F and P are
    // known written, looking at up to 32 blocks' flags in one round trip to L2, and warp
    // 1 waits for the segment's z beside it.  One thread looking at each block's flag as
    // the rows reached it (a round trip per 64 rows while the block waited at a barrier)
    // made the update into a new array 1 to 8 percent slower at n = 2000 to 10000 (H100,
    // A/B with each build in its own process; float64, n = 5000, k = 1: 312 against
    // 288 us), the apply's jobs being behind the chain there (in double the last of them
    // start after it, with one block per SM: globaltimer stamps).
    const int last = (r_end - 1) / ST_B;
    int ready = r_begin / ST_B - 1;
    if (follow) {
        if (tid < 32) ready = st_done_ready(done, r_begin / ST_B, last);
        else if (tid == 32 && seg > 0) flag_wait(zflags + job.x, seg);
        __syncthreads();
        st_stamp(1);
    }
    for (int e = tid; split && e < (kz - kp) * 32; e += ST_NT)   // (split F past 32 + kp)
        Ft[(32 + kp + e / 32) * fld + e % 32] = Fs[(32 + kp + e / 32) * fld + e % 32] = 0;
    for (int e = tid; e < kz * 64; e += ST_NT) {
        const int q = e / 64, c = e % 64;
        T z = 0;
        if (q < k && c0 + c < n)
            z = seg == 0 ? W[q * wq + (c0 + c) * wc]
                         : __ldcg(Zs + seg * npad * kp + (long)(c0 + c) * kp + q);
        Z[q * ST_LD + c] = z;
    }
    // (k = 1: F's first four rows, M_II's closed form, one 16-byte load a thread at most)
    constexpr bool rank1 = st_f_closed<T, KW>();
    constexpr int NF = rank1 ? 1 : 6 * sizeof(T) / 8;
    T rt[8];
    int4 fv[NF], pv[4 * sizeof(T) / 8];
    const int nf = (32 + kp) * 32, nfu = rank1 ? 4 * 32 : nf, np = 32 * kp;
    st_fetch<32>(rt, R, ldr, n, r_begin, c0);
    st_fetch_vec<NF>(fv, F + (long)(r_begin / 32) * nf, nfu);
    st_fetch_vec<4 * sizeof(T) / 8>(pv, P + (long)r_begin * kp, np);
    ST_PART_START;
    for (int r0 = r_begin; r0 < r_end; r0 += 32) {
        // (the next 32 rows are prefetched below: their block's F and P must be there)
        if (follow && tid < 32 && r0 + 32 < r_end && (r0 + 32) / ST_B > ready)
            ready = st_done_ready(done, (r0 + 32) / ST_B, last);
        __syncthreads();
        ST_PART(0);
        st_stash<32>(B, rt);
        if (split)
            st_stash_split<3>(reinterpret_cast<float*>(Ft), reinterpret_cast<float*>(Fs),
                              fv, nf);
        else
            st_stash_padded<NF>(Ft, fv, nfu, 32, fld);
        st_stash_padded<4 * sizeof(T) / 8>(Pi, pv, np, kp, pld);
        if (r0 + 32 < r_end) {
            st_fetch<32>(rt, R, ldr, n, r0 + 32, c0);
            st_fetch_vec<NF>(fv, F + (long)(r0 / 32 + 1) * nf, nfu);
            st_fetch_vec<4 * sizeof(T) / 8>(pv, P + (long)(r0 + 32) * kp, np);
        }
        __syncthreads();
        ST_PART(1);
        if constexpr (rank1) {                        // (Z's update inside)
            ST_PART(2);
            st_apply_rank1(out, ldo, r0, r_end, c0, n, reinterpret_cast<float*>(Ft), fld,
                           reinterpret_cast<const float*>(B), reinterpret_cast<float*>(Z),
                           reinterpret_cast<const float*>(Pi), pld, r0 + 32 - c0);
            ST_PART(3);
            continue;
        }
        // Z -= P_I^T R_I; the columns these rows finish are zero from here on
        if (kp == 4)
            st_apply_z4(Z, Pi, B, k, r0 + 32 - c0);
        else if constexpr (sizeof(T) == 4 && MMA != 0) {
            // (KW: the largest k of the kernel, so that it holds only the code it runs)
            const int cz = r0 + 32 - c0;
            float* const z = reinterpret_cast<float*>(Z);
            const float *const pi = reinterpret_cast<const float*>(Pi),
                        *const b = reinterpret_cast<const float*>(B);
            if (KW <= 16 || k <= 16)
                st_apply_z_mma<1>(z, pi, pld, b, k, cz);
            else if (k <= 32)
                st_apply_z_mma<2>(z, pi, pld, b, k, cz);
            else
                st_apply_z_mma<4>(z, pi, pld, b, k, cz);
        } else
            st_product(Z, ST_LD, 1, Pi, pld, B, ST_LD, 32, k, 64, tq, T(-1), true,
                       r0 + 32 - c0);
        __syncthreads();
        ST_PART(2);
        // R~_I = M_II R_I + Wm_I Z (B and Z are one (32 + kz) x 64 operand)
        st_apply_out(out, ldo, r0, r_end, c0, n, Ft, fld, B, kz, split);
        ST_PART(3);
    }
    if (follow) ST_PART_END((r_end - r_begin + 31) / 32);   // (st_who: the one launch)
}

__device__ void st_report(int* sync, int nb, int* found)
{
    // Once every block of the solve is done, the last one copies fail, non-finite and
    // zero (sync[1 .. 3]: final by then) to `found`, host memory that the GPU writes, and
    // then sets found[3]: the host sees how the update went as soon as the solve is over
    // (the apply may still be writing), with no copy and no wait for the launch's end.
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(st_sync_part(sync, nb, ST_COUNT), 1) == nb - 1) {
            volatile int* const host = found;
            for (int i = 0; i < 3; ++i) host[i] = flag_acquire(sync + 1 + i);
            __threadfence_system();
            host[3] = 1;
            st_report_stamp();
        }
    }
}

__device__ __forceinline__ int st_ticket(int* sync)
{
    // blocks numbered in the order they start, so that every block one waits for is running
    __shared__ int ticket;
    if (threadIdx.x == 0) ticket = atomicAdd(sync, 1);
#ifdef QRLAB_PHASE_TIMES
    if (threadIdx.x == 0) st_who = ticket;
#endif
    __syncthreads();
    return ticket;
}

template <typename T, int KW>
__device__ void st_update(const T* R, long ldr, T* out, long ldo, const T* W, long wq, long wc,
                          int n, int k, T sgn, T* P, T* F, T* Zs, T* Gs, int sb,
                          const int4* table, int* sync, int* found, const int* before,
                          int zeros, T gmax, const StTensorMap* rmap)
{
    // the solve and the apply in one launch (out is not R): the first nb blocks solve, the
    // others apply, each as soon as the rows it needs are ready.  zeros: whether the
    // blocks of the solve write out's strict lower triangle (not for a pass whose result
    // only the next pass reads: it never reads that triangle).
    // Passes (GpuExecutor.structured_update_passes): the launch of the next pass may start
    // once every block of this one has (a programmatic dependent launch; without one this
    // is a no-op).  Its blocks then wait, by tiles of 64 columns, for the jobs of this
    // pass's apply (before: this pass's sync, or null for the first pass): a block of the
    // solve for the whole tile of its columns of R (this pass's out), a job of the apply
    // for the tile it reads and writes (its out is the array this pass read, and this
    // pass has read the tile once its jobs of the tile are done).
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const int t = st_ticket(sync), nb = (n + ST_B - 1) / ST_B;
    const int4 job = t < nb ? make_int4(t, 0, 0, 0) : table[t - nb];
    if (before) {
        // the apply's jobs of tile c: one per segment that reaches its diagonal block
        const int c = job.x, seg = ST_B * sb;
        if (threadIdx.x == 0)
            flag_wait(st_sync_part(before, nb, ST_COLS) + c,
                      (min(ST_B * (c + 1), n) + seg - 1) / seg);
        __syncthreads();
    }
    st_stamp(0);
    if (t < nb) {
        // a block of the solve writes the zeros left of its diagonal block (the apply's
        // table has none), those it did not write while waiting once it is done
        const int zt = st_solve<T, KW>(t, R, ldr, W, wq, wc, n, k, sgn, P, F, Zs, Gs, sb,
                                           sync, gmax, rmap, zeros ? out : nullptr, ldo);
        st_report(sync, nb, found);
        if (zeros) st_zero(out, ldo, t * ST_B, min(ST_B, n - t * ST_B), zt * ST_B, t * ST_B);
    } else {
        st_apply<T, KW == 1 ? 0 : 1, KW>(job, true, R, ldr, out, ldo, W, wq, wc, n, k, P, F,
                                     Zs, 0, sync);
        __syncthreads();
        if (threadIdx.x == 0)
            asm volatile("red.release.gpu.global.add.s32 [%0], 1;"
                         :: "l"(st_sync_part(sync, nb, ST_COLS) + job.x) : "memory");
    }
    st_stamp(6);
}

// The solve, and the solve and apply in one launch, for k = 1 (names ending in 1_f32,
// 1_f64), for 1 < k <= 16 (16_f32, 16_f64) and for other k, as separate kernels (KW the
// largest k): in one body the loop and hand-off of k = 1 (st_z_regs, st_ll_*) took
// registers from the rest and made the float update of k = 16 and 64 1 to 7 percent
// slower (H100).  In float, two blocks per SM (left alone, ptxas gave the solve of k = 1
// 208 registers, the one launch 155); where the solve's blocks are few, the host asks for
// enough shared memory that each block of the one launch has an SM to itself
// (gpu._structured_plan: a block of the solve beside another steps more slowly).
#define ST_KERNELS(NAME, T, KW, BOUND)                                                        \
    __global__ void __launch_bounds__(ST_NT, BOUND) structured_solve##NAME(                 \
        const T* R, long ldr, const T* W, long wq, long wc, int n, int k, T sgn, T* P,     \
        T* F, T* Zs, T* Gs, int sb, int* sync, int* found, T gmax,                         \
        const __grid_constant__ StTensorMap rmap)                                          \
    {                                                                                      \
        const int t = st_ticket(sync);                                                     \
        st_solve<T, KW>(t, R, ldr, W, wq, wc, n, k, sgn, P, F, Zs, Gs, sb, sync, gmax,     \
                        &rmap);                                                            \
        st_report(sync, (n + ST_B - 1) / ST_B, found);                                     \
    }                                                                                      \
    __global__ void __launch_bounds__(ST_NT, BOUND) structured_update##NAME(                \
        const T* R, long ldr, T* out, long ldo, const T* W, long wq, long wc, int n, int k, \
        T sgn, T* P, T* F, T* Zs, T* Gs, int sb, const int4* table, int* sync, int* found, \
        const int* before, int zeros, T gmax, const __grid_constant__ StTensorMap rmap)    \
    {                                                                                      \
        st_update<T, KW>(R, ldr, out, ldo, W, wq, wc, n, k, sgn, P, F, Zs, Gs, sb, table,  \
                         sync, found, before, zeros, gmax, &rmap);                         \
    }

extern "C" {
ST_KERNELS(_f32, float, 64, 2)
ST_KERNELS(16_f32, float, 16, 2)
ST_KERNELS(1_f32, float, 1, 2)
ST_KERNELS(_f64, double, 64, 1)
ST_KERNELS(16_f64, double, 16, 1)
ST_KERNELS(1_f64, double, 1, 1)
// The apply after the solve: k at run time (float: 3xTF32 or FMA by k), and for k = 1 as
// the one launch of k = 1 takes it (in float from M_II's closed form, st_apply_rank1)
#define ST_APPLY_KERNEL(NAME, T, MMA, KW, ...)                                              \
    __global__ void __launch_bounds__(__VA_ARGS__) structured_apply##NAME(                  \
        const T* R, long ldr, T* out, long ldo, const T* W, long wq, long wc, int n, int k, \
        const T* P, const T* F, const T* Zs, const int4* table, int check, const int* sync) \
    {                                                                                      \
        st_apply<T, MMA, KW>(table[blockIdx.x], false, R, ldr, out, ldo, W, wq, wc, n, k,  \
                             P, F, Zs, check, sync);                                       \
    }
ST_APPLY_KERNEL(_f32, float, -1, 64, ST_NT)
// (two blocks per SM: left alone, ptxas gave this one 169 registers, one block per SM)
ST_APPLY_KERNEL(_f64, double, -1, 64, ST_NT, 2)
ST_APPLY_KERNEL(1_f32, float, 0, 1, ST_NT, 2)
ST_APPLY_KERNEL(1_f64, double, 0, 1, ST_NT, 2)
}

// Back substitution R x = y for one right-hand side (R upper triangular, n x n, rows
// contiguous; its strict lower triangle is not read).  cuBLAS's trsv/trsm for one column
// took 0.5 ms at n = 3000 and 2.7 ms at n = 10000 on an H100: a chain of small steps.
// Here one block per 64 rows I, taken from the last rows up (tickets, so every block
// waited for has started), inverts R_II while it waits (st_invert), subtracts
// R_IJ x_J from y_I for each J > I as block J publishes x_J (the tile of R read one
// ahead into registers), and then publishes x_I = R_II^{-1} s.  The chain's step is one
// flag, 64 values of x and two 64 x 64 products with a vector.  Inverting the diagonal
// blocks is what MAGMA's triangular solves do too; the result differs from substitution
// by rounding, within the usual bounds for a well-conditioned R_II.
// sync: ints, zero: [ticket, then per block its flag, then a flag that a block sets where
// its diagonal holds a zero (solve_triangular's test, without a launch of its own)].  y
// has a stride of incy values (a column of a row-major R carried beside it, say).

template <typename T>
__device__ __forceinline__ T st_row_dot(const T* A, const T* v)
{
    // row tid / 4 of the 64 x 64 tile A (leading dimension ST_LD) times v, summed over
    // the four neighbouring lanes that split it (every lane gets the sum)
    const int r = threadIdx.x >> 2, q = threadIdx.x & 3;
    T acc = 0;
#pragma unroll
    for (int u = 0; u < 16; ++u) acc = fma(A[r * ST_LD + q + 4 * u], v[q + 4 * u], acc);
    acc += __shfl_xor_sync(0xffffffff, acc, 1);
    acc += __shfl_xor_sync(0xffffffff, acc, 2);
    return acc;
}

template <typename T>
__device__ void st_back_solve(const T* __restrict__ R, long ldr, const T* __restrict__ y,
                              long incy, T* x, int n, int* sync)
{
    extern __shared__ __align__(16) unsigned char st_raw[];
    T* const inv = reinterpret_cast<T*>(st_raw);       // R_II^{-1}
    T* const tile = inv + ST_B * ST_LD;                 // R_II, then the tiles R_IJ
    T* const tmp = tile + ST_B * ST_LD;                 // st_invert's, 32 x ST_LD
    T* const xin = tmp + 32 * ST_LD;                    // x_J coming in; then s
    __shared__ T rdiag[ST_B];
    const int tid = threadIdx.x, nb = (n + ST_B - 1) / ST_B;
    const int I = nb - 1 - st_ticket(sync), r0 = I * ST_B, h = min(ST_B, n - r0);
    int* const flags = sync + 1;

    T v[16], nxt[16];
    st_fetch<64>(v, R, ldr, n, r0, r0);
    st_stash<64>(tile, v);
    if (I + 1 < nb) st_fetch<64>(nxt, R, ldr, n, r0, (nb - 1) * ST_B);
    __syncthreads();
    if (tid < ST_B) {
        if (tid >= h) tile[tid * ST_LD + tid] = 1;      // the identity past n
        else if (tile[tid * ST_LD + tid] == T(0))
            flags[nb] = 1;                              // singular (every writer stores 1)
        rdiag[tid] = T(1) / tile[tid * ST_LD + tid];
    }
    __syncthreads();
    st_invert(inv, tile, rdiag, tmp);
    // s_r, held by the first of the four lanes of row r
    const int r = tid >> 2;
    T s = (r < h) ? y[(long)(r0 + r) * incy] : T(0);
    for (int J = nb - 1; J > I; --J) {
        __syncthreads();                                // the tile and xin are free
        st_stash<64>(tile, nxt);
        if (J - 1 > I) st_fetch<64>(nxt, R, ldr, n, r0, (J - 1) * ST_B);
        if (tid == 0) flag_wait(flags + J);
        __syncthreads();
        if (tid < ST_B) xin[tid] = J * ST_B + tid < n ? __ldcg(x + J * ST_B + tid) : T(0);
        __syncthreads();
        s -= st_row_dot(tile, xin);
    }
    __syncthreads();
    if ((tid & 3) == 0) xin[r] = s;
    __syncthreads();
    const T xi = st_row_dot(inv, xin);
    if ((tid & 3) == 0 && r < h) x[r0 + r] = xi;
    __syncthreads();
    if (tid == 0) flag_release(flags + I);
}

extern "C" {
__global__ void __launch_bounds__(ST_NT) back_solve_f32(const float* R, long ldr,
                                                       const float* y, long incy, float* x,
                                                       int n, int* sync)
{ st_back_solve(R, ldr, y, incy, x, n, sync); }
__global__ void __launch_bounds__(ST_NT) back_solve_f64(const double* R, long ldr,
                                                       const double* y, long incy, double* x,
                                                       int n, int* sync)
{ st_back_solve(R, ldr, y, incy, x, n, sync); }
}
