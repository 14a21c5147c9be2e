/* Non-temporal stores for the CPU's kernels (C only; included by dialect.h): a kernel whose
 * output is larger than the last-level cache can hold beside its input writes it around the
 * caches. A plain store first reads each line it writes into the cache (the "read for
 * ownership"), so a kernel that reads x and writes y moves three bytes for each two it needs;
 * and that y would be evicted before its reader came back to it anyway. The values are the same
 * bits either way.
 *
 * The kernel computes its output in pieces of one vector (CT_STREAM_PIECE elements, 32 bytes),
 * each stored as it is made: the compiler keeps the piece in a register. Pieces of a whole row
 * computed first and copied out after were slower than plain stores: the stores then came in
 * bursts that the loads did not overlap. */
#ifndef CT_STREAM_STORE_H
#define CT_STREAM_STORE_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

/* Outputs of at least this many bytes are streamed: set by the CPU backend from the size of the
 * last-level cache (cpu_kernels.c). */
extern long ct_cpu_streaming_min_bytes;

#define CT_STREAM_BYTES 32
/* Elements of a piece of the type of element e. */
#define CT_STREAM_PIECE(e) ((long)(CT_STREAM_BYTES / sizeof(e)))

/* How many of the n elements at dst come before the first 32-byte boundary (stored plainly). */
#define ct_stream_head(dst, n)                                                                   \
    ct_stream_head_bytes((const void *)(dst), (long)sizeof((dst)[0]), (n))
static inline __attribute__((always_inline)) long ct_stream_head_bytes(const void *dst, long size, long n)
{
    long head = (long)(-(uintptr_t)dst & (CT_STREAM_BYTES - 1)) / size;
    return head < n ? head : n;
}

/* Stores one piece (32 bytes, from a private array) at dst, 32-byte aligned, around the caches. */
static inline __attribute__((always_inline)) void ct_stream_piece(void *dst, const void *piece)
{
#if defined(__AVX__)
    _mm256_stream_si256((__m256i *)dst, _mm256_loadu_si256((const __m256i *)piece));
#elif defined(__SSE2__)
    _mm_stream_si128((__m128i *)dst, _mm_loadu_si128((const __m128i *)piece));
    _mm_stream_si128((__m128i *)dst + 1, _mm_loadu_si128((const __m128i *)piece + 1));
#else
    memcpy(dst, piece, CT_STREAM_BYTES);
#endif
}

/* Orders the streamed stores before whatever the thread does next (the kernel's end, where
 * another thread may read them). */
static inline __attribute__((always_inline)) void ct_stream_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

#endif
