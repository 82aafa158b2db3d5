// Vector moves of two or four consecutive values, shared by the kernel files (prepended to each
// module's source by qrlab/gpu.py).

template <typename T>
__device__ __forceinline__ void lds4(const T* p, T v[4])
{
    // four consecutive values of shared memory (16-byte aligned) in one or two loads
    if constexpr (sizeof(T) == 4) {
        const float4 q = *reinterpret_cast<const float4*>(p);
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        const double2 a = *reinterpret_cast<const double2*>(p);
        const double2 b = *reinterpret_cast<const double2*>(p + 2);
        v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
    }
}

template <typename T>
__device__ __forceinline__ void lds2(const T* p, T v[2])
{
    // two consecutive values of shared memory (aligned to their size) in one load
    if constexpr (sizeof(T) == 4) {
        const float2 q = *reinterpret_cast<const float2*>(p);
        v[0] = q.x; v[1] = q.y;
    } else {
        const double2 q = *reinterpret_cast<const double2*>(p);
        v[0] = q.x; v[1] = q.y;
    }
}

template <typename T>
__device__ __forceinline__ void st4(T* p, const T v[4])
{
    // four consecutive values into shared or global memory (16-byte aligned)
    if constexpr (sizeof(T) == 4) {
        *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        *reinterpret_cast<double2*>(p) = make_double2(v[0], v[1]);
        *reinterpret_cast<double2*>(p + 2) = make_double2(v[2], v[3]);
    }
}
