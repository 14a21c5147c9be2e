/* The kernel dialect: a dozen macros that let one kernel text compile as OpenCL C, as CUDA C
 * through NVRTC, and as plain C that the CPU backend calls from an OpenMP loop.
 *
 * A kernel is written as
 *     CT_KERNEL name(CT_IDX_PARAM CT_KERNEL_BUFFERS, const ct_kparams p) { long i = CT_IDX; ... }
 * Every kernel has the same signature: four untyped buffers and one parameter block (see
 * kernel_params.h), so that one launcher per backend serves every kernel.
 *
 * Cooperative kernels run as groups of CT_GROUP_SIZE work items (a CUDA block, an OpenCL
 * work-group) that share CT_LOCAL arrays and meet at CT_BARRIER(); CT_GROUP_ID numbers the groups
 * and CT_LOCAL_ID the items of one. Every item of a group must reach every barrier. The backend
 * chooses the group size (see ct_work_shape): a CPU runs groups of one item, where barriers and
 * local arrays cost nothing and each item walks a long vector loop; a GPU runs blocks of 256.
 * CT_GROUP_CAPACITY bounds the group size a build takes and sizes CT_LOCAL arrays;
 * CT_ITEM_LANES is how many adjacent elements an item takes at a time, each in a lane of its
 * own (a row reduction's elements, a column reduction's outputs): a CPU core's vector (16) in C;
 * 4 on a device, where the warp's items take adjacent 16-byte pieces and each item has 4
 * independent loads in flight (one in flight per thread leaves an H100 at half its bandwidth). */
#ifndef CT_KERNEL_DIALECT_H
#define CT_KERNEL_DIALECT_H

#define CT_CAT_(a, b) a##b
#define CT_CAT(a, b) CT_CAT_(a, b)
/* Elements of a vector item (see CT_FLAT_VECTOR below); the number is in kernel_params.h. */
#define CT_VECTOR_WIDTH CT_DEVICE_VECTOR_WIDTH

#if defined(__OPENCL_VERSION__)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* No a * b + c fused into one rounding: OpenCL C allows that by default, and PoCL does it where
 * the host has FMA, so results depended on the machine's instruction set. Every backend builds
 * the kernels so (C: -ffp-contract=off, NVRTC: --fmad=false), and + - * / give the same bits on
 * each. */
#pragma OPENCL FP_CONTRACT OFF
#define CT_KERNEL __kernel void
#define CT_GLOBAL __global
#define CT_IDX_PARAM
#define CT_IDX ((long)get_global_id(0))
#define CT_FN static inline
#define CT_SIMD_REDUCTION(op, var)
#define CT_SIMD
#define CT_GROUP_ID ((long)get_group_id(0))
#define CT_LOCAL_ID ((long)get_local_id(0))
#define CT_GROUP_SIZE ((long)get_local_size(0))
#define CT_LOCAL __local
#define CT_LOCAL_PTR __local
#define CT_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
#define CT_GROUP_CAPACITY 256
#define CT_ITEM_LANES 4
/* vloadn / vstoren need only the element's alignment; a private array takes the vector. */
#define CT_VLOAD(dst, src, e) CT_CAT(vstore, CT_VECTOR_WIDTH)(CT_CAT(vload, CT_VECTOR_WIDTH)(0, (src) + (e)), 0, (dst))
#define CT_VSTORE(dst, e, src) CT_CAT(vstore, CT_VECTOR_WIDTH)(CT_CAT(vload, CT_VECTOR_WIDTH)(0, (src)), 0, (dst) + (e))

#elif defined(__CUDACC_RTC__) || defined(__CUDACC__)
typedef unsigned char uchar;
typedef unsigned int uint;
typedef unsigned long ulong;
#define CT_KERNEL extern "C" __global__ void
#define CT_GLOBAL
#define CT_IDX_PARAM
#define CT_IDX ((long)blockIdx.x * (long)blockDim.x + (long)threadIdx.x)
/* not static: NVRTC warns of every static helper a family does not call (#177-D) */
#define CT_FN __device__ inline
#define CT_SIMD_REDUCTION(op, var)
#define CT_SIMD
#define CT_GROUP_ID ((long)blockIdx.x)
#define CT_LOCAL_ID ((long)threadIdx.x)
#define CT_GROUP_SIZE ((long)blockDim.x)
#define CT_LOCAL __shared__
#define CT_LOCAL_PTR
#define CT_BARRIER() __syncthreads()
#define CT_GROUP_CAPACITY 256
#define CT_ITEM_LANES 4
/* Warp shuffles finish a group's fold (see CT_GROUP_FOLD_WITH): the same pairs as the
 * local-memory steps they replace, so the result is the same bits. */
__device__ inline unsigned ct_warp_mask(void)
{
    return blockDim.x >= 32 ? 0xffffffffu : (1u << blockDim.x) - 1u;
}
template <typename T> __device__ inline T ct_shuffle_down(T v, long s)
{
    return __shfl_down_sync(ct_warp_mask(), v, (unsigned)s);
}
template <> __device__ inline uchar ct_shuffle_down<uchar>(uchar v, long s)
{
    return (uchar)__shfl_down_sync(ct_warp_mask(), (int)v, (unsigned)s);
}
#define CT_SHUFFLE_STEP(s, spacing) ((spacing) == 1 && (s) < 32)
#define CT_SHUFFLE_DOWN(v, s) ct_shuffle_down(v, s)
/* Every item of the warp takes part in a shuffle: its value is read once, into o_, before a
 * COMBINE that may evaluate its second argument conditionally. */
#define CT_SHUFFLE_FOLD(v, COMBINE)                                                              \
    {                                                                                            \
        auto o_ = ct_shuffle_down((v), s_);                                                      \
        (v) = COMBINE((v), o_);                                                                  \
    }
/* A vector item's elements move as one aligned struct: 16 bytes in one instruction (float4,
 * int4, double2 twice for 4 doubles), 4 bytes for 4 uchars. The host checks the alignment. */
template <typename T> struct alignas(sizeof(T) * CT_VECTOR_WIDTH < 16 ? sizeof(T) * CT_VECTOR_WIDTH : 16)
ct_vector { T v[CT_VECTOR_WIDTH]; };
template <typename T> __device__ inline void ct_vload(T *dst, const T *src, long e)
{
    ct_vector<T> v = *reinterpret_cast<const ct_vector<T> *>(src + e);
#pragma unroll
    for (int k = 0; k < CT_VECTOR_WIDTH; k++) dst[k] = v.v[k];
}
template <typename T> __device__ inline void ct_vstore(T *dst, long e, const T *src)
{
    ct_vector<T> v;
#pragma unroll
    for (int k = 0; k < CT_VECTOR_WIDTH; k++) v.v[k] = src[k];
    *reinterpret_cast<ct_vector<T> *>(dst + e) = v;
}
#define CT_VLOAD(dst, src, e) ct_vload(dst, src, e)
#define CT_VSTORE(dst, e, src) ct_vstore(dst, e, src)

#else /* plain C, on the CPU */
#include <tgmath.h> /* exp(float) must be expf, as in OpenCL C and CUDA */
typedef unsigned char uchar;
typedef unsigned int uint;
typedef unsigned long ulong;
#if defined(__OPTIMIZE__) || defined(CT_DIALECT_STANDIN)
#define CT_KERNEL static inline void
#else
/* Unoptimised (the sanitizers' Debug build), a CPU kernel stays a function that the launch loop
 * calls for every work item with a copy of the parameter block, which the sanitizers then check:
 * half the time of their training tests. (Not the stand-in driver's: its launches run a group's
 * items one call each, and an inlined kernel's large frame cost more to poison per call.) */
#define CT_KERNEL static inline __attribute__((always_inline)) void
#endif
#define CT_GLOBAL
#define CT_IDX_PARAM long ct_idx_,
#define CT_IDX ct_idx_
/* Always inlined: the helpers take the kernel's parameter block by address, and a call that
 * stays a call makes the compiler copy the whole block (432 bytes) for every work item. */
#define CT_FN static inline __attribute__((always_inline))
#define CT_PRAGMA(x) _Pragma(#x)
/* Lets the compiler vectorise a reduction loop (reassociating it) where OpenMP runs it. */
#define CT_SIMD_REDUCTION(op, var) CT_PRAGMA(omp simd reduction(op : var))
/* The same for a loop whose iterations are independent (short loops over private arrays, which
 * the compiler would otherwise unroll into branches). */
#define CT_SIMD CT_PRAGMA(omp simd)
#define CT_UNROLL CT_PRAGMA(GCC unroll 16)
#if defined(CT_DIALECT_STANDIN)
/* The tests' stand-in CUDA driver runs this C as a GPU would: blocks of many threads, each a
 * fiber of the worker thread that runs the block, switching at barriers (tests/cuda). Local
 * arrays are per worker thread, hence shared by the fibers of the block it runs. */
long ctorch_standin_group_id(void);
long ctorch_standin_local_id(void);
long ctorch_standin_group_size(void);
void ctorch_standin_barrier(void);
#define CT_GROUP_ID ctorch_standin_group_id()
#define CT_LOCAL_ID ctorch_standin_local_id()
#define CT_GROUP_SIZE ctorch_standin_group_size()
#define CT_LOCAL static _Thread_local
#define CT_LOCAL_PTR
#define CT_BARRIER() ctorch_standin_barrier()
#define CT_GROUP_CAPACITY 1024
#define CT_ITEM_LANES 4
#else
/* The CPU: a group is one work item, the one CT_IDX names. */
#define CT_GROUP_ID CT_IDX
#define CT_LOCAL_ID 0L
#define CT_GROUP_SIZE 1L
#define CT_LOCAL
#define CT_LOCAL_PTR
#define CT_BARRIER() ((void)0)
#define CT_GROUP_CAPACITY 1
#define CT_ITEM_LANES 16
#endif
#define CT_VLOAD(dst, src, e)                                                                    \
    for (int v_ = 0; v_ < CT_VECTOR_WIDTH; v_++) (dst)[v_] = (src)[(e) + v_]
#define CT_VSTORE(dst, e, src)                                                                   \
    for (int v_ = 0; v_ < CT_VECTOR_WIDTH; v_++) (dst)[(e) + v_] = (src)[v_]
#endif

#ifndef CT_UNROLL /* a hint to unroll a short loop of constant length (C only) */
#define CT_UNROLL
#endif
/* Flat launches. Elementwise, copy and fill kernels flag a launch whose operands are all
 * contiguous over the same elements with l[0] != 0, in one of two shapes the host chooses
 * (values in kernel_params.h; see ct_kparams_flat in tensor/kernel_run.c):
 *   CT_FLAT_ONE     item i is element i (the CPU; a device when an operand is not aligned);
 *   CT_FLAT_VECTOR  item i is elements [i * W, i * W + W) of the p.size[0] elements, W being
 *                   CT_VECTOR_WIDTH (a device's work shape says so with elementwise_width W):
 *                   moved with CT_VLOAD and CT_VSTORE when the item has all W, else one by one
 *                   (the last item's tail). The host asks for it only where every operand starts
 *                   a multiple of W elements into its buffer, so every vector is aligned to
 *                   min(16, W * sizeof) bytes. Every build runs both shapes; a CPU asks for CT_FLAT_ONE, and
 *                   its launcher's flat loop, where l[0] is the constant 1, drops the other.
 * CT_VLOAD(dst, src, e) fills the private array dst[0..W) from src[e..e + W); CT_VSTORE(dst, e,
 * src) writes src[0..W) to dst[e..e + W). */
#define CT_VECTOR_ITEMS(p) ((p).l[0] == CT_FLAT_VECTOR)

#ifndef CT_SHUFFLE_STEP /* no shuffles: every step of a fold goes through local memory */
#define CT_SHUFFLE_STEP(s, spacing) 0
#define CT_SHUFFLE_DOWN(v, s) (v)
#define CT_SHUFFLE_FOLD(v, COMBINE)
#endif

/* Folds the group's values in a fixed tree, so that results are the same run to run: over
 * `count` items spaced `spacing` apart (count a power of 2), item t ends holding the fold of
 * items t + k * spacing, for t < spacing. The statements STORE put this item's state in local
 * arrays at index at_, COMBINE_AT fold the state stored at at_ into this item's, and
 * COMBINE_SHUFFLED fold in the state of the item s_ lanes down the warp (CUDA's last steps):
 * every item must run each shuffle, so they read shuffled values into variables first.
 * On a CPU (groups of one) nothing runs. Every item of the group must come here. */
#define CT_GROUP_FOLD_WITH(count, spacing, STORE, COMBINE_AT, COMBINE_SHUFFLED)                   \
    for (long s_ = (count) / 2; s_ > 0; s_ /= 2) {                                               \
        if (CT_SHUFFLE_STEP(s_, spacing)) {                                                      \
            COMBINE_SHUFFLED                                                                     \
            continue;                                                                            \
        }                                                                                        \
        {                                                                                        \
            long at_ = CT_LOCAL_ID;                                                              \
            STORE                                                                                \
        }                                                                                        \
        CT_BARRIER();                                                                            \
        if (CT_LOCAL_ID / (spacing) < s_) {                                                      \
            long at_ = CT_LOCAL_ID + s_ * (spacing);                                             \
            COMBINE_AT                                                                           \
        }                                                                                        \
        CT_BARRIER();                                                                            \
    }

/* The same for one value v through the local array scratch; COMBINE(a, b) gives a value. */
#define CT_GROUP_FOLD(scratch, v, COMBINE, count, spacing)                                       \
    CT_GROUP_FOLD_WITH(count, spacing, (scratch)[at_] = (v);, (v) = COMBINE((v), (scratch)[at_]);, \
                       CT_SHUFFLE_FOLD(v, COMBINE))

/* Gives every item of the group item 0's v (after a fold). */
#define CT_GROUP_BROADCAST(scratch, v)                                                           \
    {                                                                                            \
        if (CT_LOCAL_ID == 0) (scratch)[0] = (v);                                                \
        CT_BARRIER();                                                                            \
        (v) = (scratch)[0];                                                                      \
        CT_BARRIER();                                                                            \
    }

/* Folds an item's CT_ITEM_LANES lanes into lane 0 in a fixed tree: the same association
 * whatever vector width the compiler gives the lane loops. */
#define CT_FOLD_LANES(acc, COMBINE)                                                              \
    CT_UNROLL for (long w_ = CT_ITEM_LANES / 2; w_ > 0; w_ /= 2) {                               \
        CT_SIMD for (long v_ = 0; v_ < w_; v_++) acc[v_] = COMBINE(acc[v_], acc[v_ + w_]);       \
    }

/* Item t's share of a row of N elements: slots of CT_ITEM_LANES adjacent elements, t, t + group,
 * ..., each lane of a slot (at + v) adding into its own accumulator, folded after in a fixed tree
 * (CT_FOLD_LANES). The sums are then the same whatever vector width the compiler gives the lane
 * loop: a baseline x86-64 build and a -march=native one compute the same bits (an omp simd
 * reduction would not). Each whole slot first runs AHEAD (may be empty; layer_norm.ct's prefetch
 * of a row further on). */
#define CT_SLOTS_AHEAD(N, t, group, AHEAD, LANE)                                                 \
    {                                                                                            \
        long whole_ = (N) / CT_ITEM_LANES, rest_ = (N) - whole_ * CT_ITEM_LANES, s_ = (t);       \
        for (; s_ < whole_; s_ += (group)) {                                                     \
            long at = s_ * CT_ITEM_LANES;                                                        \
            AHEAD                                                                                \
            CT_SIMD for (long v = 0; v < CT_ITEM_LANES; v++) { LANE }                            \
        }                                                                                        \
        if (s_ == whole_ && rest_ > 0) {                                                         \
            long at = s_ * CT_ITEM_LANES;                                                        \
            for (long v = 0; v < rest_; v++) { LANE }                                            \
        }                                                                                        \
    }
#define CT_SLOTS(N, t, group, LANE) CT_SLOTS_AHEAD(N, t, group, , LANE)

/* Device compilers get kernel_params.h's text prepended (see embed_kernels.cmake); C includes it. */
#ifndef CT_KERNEL_PARAMS_H
#include "kernels/kernel_params.h"
#endif

/* The buffers of every kernel; cast with CT_BUFFER(type, index) (offset applied). */
#define CT_KERNEL_BUFFERS                                                                        \
    CT_GLOBAL void *ct_b0_, CT_GLOBAL void *ct_b1_, CT_GLOBAL void *ct_b2_, CT_GLOBAL void *ct_b3_
#define CT_BUFFER(type, index) ((CT_GLOBAL type *)ct_b##index##_ + p.off[index])

/* float16 and bfloat16 are storage types: a kernel loads a value into float (CT_LOAD), computes
 * in float, and stores it rounded to nearest even (CT_STORE), as PyTorch computes with c10::Half.
 * The conversions are integer arithmetic on the bits, the same on every device, and the same as
 * the host's (src/core/half_float.c). In C a 16-bit value is a struct, so that a kernel that
 * forgets to convert does not compile; in OpenCL C it is a ushort (vload4 moves it). */
#if defined(__OPENCL_VERSION__)
typedef ushort ct_f16;
typedef ushort ct_bf16;
#define CT_HALF_BITS(x) (x)
#define CT_F16_OF_BITS(b) ((ushort)(b))
#define CT_BF16_OF_BITS(b) ((ushort)(b))
#define CT_FLOAT_BITS(f) as_uint(f)
#define CT_BITS_FLOAT(u) as_float(u)
#elif defined(__CUDACC_RTC__) || defined(__CUDACC__)
struct ct_f16 { unsigned short bits; };
struct ct_bf16 { unsigned short bits; };
__device__ inline ct_f16 ct_f16_of_bits(uint b) { ct_f16 h; h.bits = (unsigned short)b; return h; }
__device__ inline ct_bf16 ct_bf16_of_bits(uint b) { ct_bf16 h; h.bits = (unsigned short)b; return h; }
#define CT_HALF_BITS(x) ((x).bits)
#define CT_F16_OF_BITS(b) ct_f16_of_bits(b)
#define CT_BF16_OF_BITS(b) ct_bf16_of_bits(b)
#define CT_FLOAT_BITS(f) __float_as_uint(f)
#define CT_BITS_FLOAT(u) __uint_as_float(u)
#else
typedef struct ct_f16 { unsigned short bits; } ct_f16;
typedef struct ct_bf16 { unsigned short bits; } ct_bf16;
CT_FN uint ct_float_bits(float f)
{
    union { float f; uint u; } v;
    v.f = f;
    return v.u;
}
CT_FN float ct_bits_float(uint u)
{
    union { float f; uint u; } v;
    v.u = u;
    return v.f;
}
#define CT_HALF_BITS(x) ((x).bits)
#define CT_F16_OF_BITS(b) ((ct_f16){(unsigned short)(b)})
#define CT_BF16_OF_BITS(b) ((ct_bf16){(unsigned short)(b)})
#define CT_FLOAT_BITS(f) ct_float_bits(f)
#define CT_BITS_FLOAT(u) ct_bits_float(u)
#endif

/* Rounded to nearest even; 65520 and beyond become infinity, NaN a quiet NaN. Both directions
 * compute every case and pick one with bit masks: a branch (or a ?: that gcc makes one) keeps
 * the CPU's loops over float16 from vectorising. */
CT_FN ct_f16 ct_float_to_f16_value(float f)
{
    uint u = CT_FLOAT_BITS(f);
    uint sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    uint special = 0x7c00u | ((uint)(u > 0x7f800000u) << 9); /* infinity, or a quiet NaN */
    /* a subnormal half or zero: adding 0.5 lines its last place up with float's */
    uint tiny = CT_FLOAT_BITS(CT_BITS_FLOAT(u) + 0.5f) - 0x3f000000u;
    uint normal = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
    uint is_special = 0u - (uint)(u >= 0x47800000u), is_tiny = 0u - (uint)(u < 0x38800000u);
    uint out = (special & is_special) | (tiny & is_tiny & ~is_special) |
               (normal & ~is_special & ~is_tiny);
    return CT_F16_OF_BITS(out | sign);
}
/* Exact. Without branches (selects), so that a CPU loop over it vectorises: with a return per
 * case it converted at a third of a plain loop's speed. */
CT_FN float ct_f16_value_to_float(ct_f16 h)
{
    uint bits = CT_HALF_BITS(h);
    uint sign = (bits & 0x8000u) << 16;
    uint exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
    uint special = sign | 0x7f800000u | (mantissa << 13);
    uint subnormal = sign | CT_FLOAT_BITS((float)mantissa * 5.9604644775390625e-8f); /* * 2^-24 */
    uint normal = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    uint is_special = 0u - (uint)(exponent == 0x1fu), is_subnormal = 0u - (uint)(exponent == 0);
    return CT_BITS_FLOAT((special & is_special) | (subnormal & is_subnormal) |
                         (normal & ~is_special & ~is_subnormal));
}
CT_FN ct_bf16 ct_float_to_bf16_value(float f)
{
    uint u = CT_FLOAT_BITS(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return CT_BF16_OF_BITS((u >> 16) | 0x40u);
    return CT_BF16_OF_BITS((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
CT_FN float ct_bf16_value_to_float(ct_bf16 h) { return CT_BITS_FLOAT((uint)CT_HALF_BITS(h) << 16); }

/* The type each dtype suffix computes in (CT_REAL), and the moves between it and the stored type
 * (CT_TYPE): CT_LOAD_S(stored) gives a CT_REAL_S, CT_STORE_S(real) a CT_TYPE_S. Both are the value
 * itself for every dtype but the 16-bit ones. */
#define CT_REAL_f32 float
#define CT_REAL_f64 double
#define CT_REAL_i32 int
#define CT_REAL_i64 long
#define CT_REAL_u8 uchar
#define CT_REAL_b8 uchar
#define CT_REAL_f16 float
#define CT_REAL_bf16 float
#define CT_LOAD_f32(x) (x)
#define CT_LOAD_f64(x) (x)
#define CT_LOAD_i32(x) (x)
#define CT_LOAD_i64(x) (x)
#define CT_LOAD_u8(x) (x)
#define CT_LOAD_b8(x) (x)
#define CT_LOAD_f16(x) ct_f16_value_to_float(x)
#define CT_LOAD_bf16(x) ct_bf16_value_to_float(x)
#define CT_STORE_f32(x) (x)
#define CT_STORE_f64(x) (x)
#define CT_STORE_i32(x) (x)
#define CT_STORE_i64(x) (x)
#define CT_STORE_u8(x) (x)
#define CT_STORE_b8(x) (x)
#define CT_STORE_f16(x) ct_float_to_f16_value(x)
#define CT_STORE_bf16(x) ct_float_to_bf16_value(x)
#define CT_LOAD(S, x) CT_LOAD_##S(x)
#define CT_STORE(S, x) CT_STORE_##S(x)

/* The buffers of a multi-tensor kernel (CT_KERNEL_WIDE_BUFFERS of them, kernel_params.h), and
 * CT_WIDE_BUFFER_TABLE(t), which declares t, an array of them to index at run time. A device
 * takes them as 32 arguments. In C the kernel keeps the 4-buffer signature that every C
 * launcher calls: the CUDA stand-in passes the address of its array of 32 as buffer 0; the CPU's
 * launcher runs one tensor at a time (cpu_kernels_optim.c) and passes its (at most 4) buffers
 * themselves, so that the compiler sees them as the loop's invariant pointers (loaded from a
 * table in the loop, they made it gather and scatter every element). */
#if defined(__OPENCL_VERSION__) || defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define CT_WIDE_ARGS_8(k)                                                                        \
    CT_GLOBAL void *ct_w##k##0_, CT_GLOBAL void *ct_w##k##1_, CT_GLOBAL void *ct_w##k##2_,       \
        CT_GLOBAL void *ct_w##k##3_, CT_GLOBAL void *ct_w##k##4_, CT_GLOBAL void *ct_w##k##5_,   \
        CT_GLOBAL void *ct_w##k##6_, CT_GLOBAL void *ct_w##k##7_
#define CT_WIDE_NAMES_8(k)                                                                       \
    ct_w##k##0_, ct_w##k##1_, ct_w##k##2_, ct_w##k##3_, ct_w##k##4_, ct_w##k##5_, ct_w##k##6_,   \
        ct_w##k##7_
#define CT_WIDE_KERNEL_BUFFERS CT_WIDE_ARGS_8(0), CT_WIDE_ARGS_8(1), CT_WIDE_ARGS_8(2), CT_WIDE_ARGS_8(3)
#define CT_WIDE_BUFFER_TABLE(t)                                                                  \
    CT_GLOBAL void *t[CT_KERNEL_WIDE_BUFFERS] = {CT_WIDE_NAMES_8(0), CT_WIDE_NAMES_8(1),         \
                                                 CT_WIDE_NAMES_8(2), CT_WIDE_NAMES_8(3)}
#define CT_WIDE_BUFFER_TABLE_ALL(t) CT_WIDE_BUFFER_TABLE(t)
#elif defined(CT_DIALECT_STANDIN)
#define CT_WIDE_KERNEL_BUFFERS CT_KERNEL_BUFFERS
#define CT_WIDE_BUFFER_TABLE(t) void *const *t = (void *const *)ct_b0_
#define CT_WIDE_BUFFER_TABLE_ALL(t) CT_WIDE_BUFFER_TABLE(t)
#else
#define CT_WIDE_KERNEL_BUFFERS CT_KERNEL_BUFFERS
#define CT_WIDE_BUFFER_TABLE(t) void *const t[CT_KERNEL_MAX_BUFFERS] = {ct_b0_, ct_b1_, ct_b2_, ct_b3_}
/* The whole table, for the multi-tensor kernels the CPU runs in one piece (the reductions of
 * optim.ct): its launcher passes the table's address as buffer 0, as the stand-in does. */
#define CT_WIDE_BUFFER_TABLE_ALL(t) void *const *t = (void *const *)ct_b0_
#endif

/* exp and erf in the type a kernel computes in. In C (the CPU, and the CUDA stand-in, which runs
 * the same C) float's are plain arithmetic (plain_math.h), so that the loops around them
 * vectorise and give the same bits in every build; a device keeps its builtins. */
#if defined(__OPENCL_VERSION__) || defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define CT_EXP(x) exp(x)
#define CT_ERF(x) erf(x)
#else
#include "kernels/plain_math.h"
#define CT_EXP(x) _Generic((x), float: ct_plain_expf, default: exp)(x)
#define CT_ERF(x) _Generic((x), float: ct_plain_erff, default: erf)(x)
/* The exact GELU's slope in float32 with one exponential (plain_math.h); elsewhere the backward
 * writes it out with CT_ERF and CT_EXP (kernels/elementwise.ct). */
#define CT_PLAIN_GELU_SLOPE_F32(y) ct_plain_gelu_slopef(y)
#endif

/* Writes VALUE, an expression of the column j, to dst[j] for this item's columns of a row of n
 * (j = t, t + group, ...). On the CPU (groups of one item), where the kernel's whole output
 * (total_bytes) reaches ct_cpu_streaming_min_bytes, the row is computed a vector at a time and
 * each vector streamed out around the caches (stream_store.h); everywhere else it is the plain
 * loop. */
#if defined(__OPENCL_VERSION__) || defined(__CUDACC_RTC__) || defined(__CUDACC__) || defined(CT_DIALECT_STANDIN)
#define CT_ROW_STORE(dst, n, t, group, j, VALUE, total_bytes)                                    \
    CT_SIMD for (long j = (t); j < (n); j += (group)) (dst)[j] = (VALUE);
#else
#include "kernels/stream_store.h"
#define CT_ROW_STORE(dst, n, t, group, j, VALUE, total_bytes)                                    \
    if ((long)(total_bytes) >= ct_cpu_streaming_min_bytes) {                                     \
        long j_ = 0, head_ = ct_stream_head((dst), (n));                                         \
        for (; j_ < head_; j_++) {                                                               \
            long j = j_;                                                                         \
            (dst)[j] = (VALUE);                                                                  \
        }                                                                                        \
        for (; j_ + CT_STREAM_PIECE((dst)[0]) <= (n); j_ += CT_STREAM_PIECE((dst)[0])) {         \
            __typeof__((dst)[0]) piece_[CT_STREAM_PIECE((dst)[0])];                              \
            CT_SIMD for (long k_ = 0; k_ < CT_STREAM_PIECE((dst)[0]); k_++) {                    \
                long j = j_ + k_;                                                                \
                piece_[k_] = (VALUE);                                                            \
            }                                                                                    \
            ct_stream_piece((dst) + j_, piece_);                                                 \
        }                                                                                        \
        for (; j_ < (n); j_++) {                                                                 \
            long j = j_;                                                                         \
            (dst)[j] = (VALUE);                                                                  \
        }                                                                                        \
        ct_stream_fence();                                                                       \
    } else {                                                                                     \
        CT_SIMD for (long j = (t); j < (n); j += (group)) (dst)[j] = (VALUE);                    \
    }
#endif

/* Asks for the cache line at p ahead of its use, where a CPU thread walks rows one after another
 * and does enough work on each that the hardware's prefetcher, which follows the loads, falls
 * behind (layer_norm.ct). A GPU hides the wait with other warps: nothing there. */
#if defined(__OPENCL_VERSION__) || defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define CT_PREFETCH(p) ((void)0)
#else
#define CT_PREFETCH(p) __builtin_prefetch((const void *)(p))
#endif

/* The C type of each dtype suffix, and a conversion into it (bool is 0 or 1). uint8 goes
 * through long: a negative float converted straight to an unsigned type is undefined, and
 * devices disagree (x86 C wraps -5.0 to 251, PoCL gave 0); through long it wraps everywhere. */
#define CT_TYPE_f32 float
#define CT_TYPE_f64 double
#define CT_TYPE_i32 int
#define CT_TYPE_i64 long
#define CT_TYPE_u8 uchar
#define CT_TYPE_b8 uchar
#define CT_TYPE_f16 ct_f16
#define CT_TYPE_bf16 ct_bf16
#define CT_CONVERT_f32(x) ((float)(x))
#define CT_CONVERT_f64(x) ((double)(x))
#define CT_CONVERT_i32(x) ((int)(x))
#define CT_CONVERT_i64(x) ((long)(x))
#define CT_CONVERT_u8(x) ((uchar)(long)(x))
#define CT_CONVERT_b8(x) ((uchar)((x) != 0))
/* through float, as c10::Half(double) and PyTorch's casts do */
#define CT_CONVERT_f16(x) ct_float_to_f16_value((float)(x))
#define CT_CONVERT_bf16(x) ct_float_to_bf16_value((float)(x))

/* The double whose bits a long holds (a double passed in a long field of the block). */
#if defined(__OPENCL_VERSION__)
#define ct_bits_to_double(x) as_double(x)
#elif defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define ct_bits_to_double(x) __longlong_as_double((long long)(x))
#else
CT_FN double ct_bits_to_double(long x)
{
    union {
        long l;
        double d;
    } u = {.l = x};
    return u.d;
}
#endif

/* A floating value converted to an integer type is undefined in C, OpenCL C and CUDA when it does
 * not fit (NaN, 1e30), and devices disagree (x86 gives INT_MIN, PTX saturates). ctorch defines
 * it, the same on every device: the value truncated toward zero, saturated at the type's limits,
 * NaN gives 0 (what OpenCL's convert_int_sat_rtz and PTX's cvt.rzi do). uint8 takes the saturated
 * int64 modulo 256, as before. CT_CONVERT_FROM(S, D, x) converts x of dtype suffix S to suffix D:
 * a floating S goes through these, an integer S is CT_CONVERT_D (integers wrap). */
CT_FN long ct_f64_to_i64(double x)
{
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return 0x7fffffffffffffffL;
    if (x < -9223372036854775808.0) return -0x7fffffffffffffffL - 1;
    return (long)x;
}
CT_FN int ct_f64_to_i32(double x)
{
    if (x != x) return 0;
    if (x >= 2147483648.0) return 0x7fffffff;
    if (x <= -2147483649.0) return -0x7fffffff - 1;
    return (int)x;
}
CT_FN long ct_f32_to_i64(float x)
{
    if (x != x) return 0;
    if (x >= 9223372036854775808.0f) return 0x7fffffffffffffffL;
    if (x < -9223372036854775808.0f) return -0x7fffffffffffffffL - 1;
    return (long)x;
}
CT_FN int ct_f32_to_i32(float x)
{
    if (x != x) return 0;
    if (x >= 2147483648.0f) return 0x7fffffff;
    if (x < -2147483648.0f) return -0x7fffffff - 1;
    return (int)x;
}
#define CT_CONVERT_FROM(S, D, x) CT_CONVERT_FROM_##S(S, D, x)
#define CT_CONVERT_FROM_f32(S, D, x) CT_FLOAT_TO_##D(S, x)
#define CT_CONVERT_FROM_f64(S, D, x) CT_FLOAT_TO_##D(S, x)
#define CT_CONVERT_FROM_i32(S, D, x) CT_CONVERT_##D(x)
#define CT_CONVERT_FROM_i64(S, D, x) CT_CONVERT_##D(x)
#define CT_CONVERT_FROM_u8(S, D, x) CT_CONVERT_##D(x)
#define CT_CONVERT_FROM_b8(S, D, x) CT_CONVERT_##D(x)
#define CT_CONVERT_FROM_f16(S, D, x) CT_FLOAT_TO_##D(f32, ct_f16_value_to_float(x))
#define CT_CONVERT_FROM_bf16(S, D, x) CT_FLOAT_TO_##D(f32, ct_bf16_value_to_float(x))
#define CT_FLOAT_TO_f32(S, x) ((float)(x))
#define CT_FLOAT_TO_f64(S, x) ((double)(x))
#define CT_FLOAT_TO_i32(S, x) ct_##S##_to_i32(x)
#define CT_FLOAT_TO_i64(S, x) ct_##S##_to_i64(x)
#define CT_FLOAT_TO_u8(S, x) ((uchar)ct_##S##_to_i64(x))
#define CT_FLOAT_TO_b8(S, x) ((uchar)((x) != 0))
#define CT_FLOAT_TO_f16(S, x) ct_float_to_f16_value((float)(x))
#define CT_FLOAT_TO_bf16(S, x) ct_float_to_bf16_value((float)(x))

/* Calls M(suffix) for dtype suffixes: kernel sources instantiate their kernels with these. */
#define CT_EACH_DTYPE(M) M(f32) M(f64) M(i32) M(i64) M(u8) M(b8)
#define CT_EACH_NUMERIC(M) M(f32) M(f64) M(i32) M(i64) M(u8)
#define CT_EACH_FLOAT(M) M(f32) M(f64)
/* The 16-bit floating suffixes: a family instantiates them where its kernels load and store
 * through CT_LOAD / CT_STORE. */
#define CT_EACH_HALF(M) M(f16) M(bf16)
/* Every dtype, the 16-bit ones included. */
#define CT_EACH_STORED_DTYPE(M) CT_EACH_DTYPE(M) CT_EACH_HALF(M)

/* The element offsets of the first `count` operands for linear index i of the strided index
 * space p.size[0..p.ndim) (row-major, last dim fastest), for i below the space's size: what is
 * left of i at the outermost dim is its coordinate there, so a 1-dim space divides nothing. */
CT_FN void ct_strided_offsets(long i, const ct_kparams *p, int count, long *offsets)
{
    for (int op = 0; op < count; op++) offsets[op] = p->off[op];
    for (long d = p->ndim - 1; d >= 0; d--) {
        long coord = i;
        if (d > 0) {
            long size = p->size[d];
            coord = i % size;
            i /= size;
        }
        for (int op = 0; op < count; op++) offsets[op] += coord * p->stride[op][d];
    }
}

#endif
