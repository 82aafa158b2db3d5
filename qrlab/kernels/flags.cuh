// Flags between the thread blocks of one launch (prepended to each module's source by
// qrlab/gpu.py, like vector.cuh).
//
// A block hands its results on as CUTLASS's semaphore does: every thread writes, a block
// barrier, then one thread's release store of the flag (flag_release).  The release is
// cumulative: it orders before the flag every store that the barrier ordered before that
// thread.  The block that waits has one thread acquire-load the flag until it is reached
// (flag_wait), then a barrier, after which all of its threads may read what was handed
// on.  A __threadfence on either side instead (what the kernels did first) waits for
// every outstanding store or load of the thread to reach the whole GPU: on an H100 it
// added 0.37 us to a hand-off of the structured Cholesky update (1.30 against 0.93), and
// the triangle launch alone took 2 to 7 percent longer with it (the sizes of 000 Tables 8
// and 9, both dtypes).

__device__ __forceinline__ int flag_acquire(const int* flag)
{
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    return v;
}

// (one thread) until *flag >= at_least; pause_ns > 0: a nanosleep between looks, for
// waits that are long compared with a round trip to L2 (they leave the SM's issue slots
// to the warps with work)
__device__ __forceinline__ void flag_wait(const int* flag, int at_least = 1, int pause_ns = 0)
{
    while (flag_acquire(flag) < at_least)
        if (pause_ns > 0) __nanosleep(pause_ns);
}

// (one thread, after a barrier of the threads whose stores the flag hands on)
__device__ __forceinline__ void flag_release(int* flag, int value = 1)
{
    asm volatile("st.release.gpu.global.s32 [%0], %1;" :: "l"(flag), "r"(value) : "memory");
}
