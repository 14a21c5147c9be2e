/* oneDNN on the CPU: one engine and stream for the process, and primitives made once per shape and
 * kept in a bounded cache (as PyTorch's mkldnn ops keep theirs), so that a training step's products
 * and convolutions cost a lookup, not a primitive's creation (tens of microseconds). */
#ifndef CT_ONEDNN_ENGINE_H
#define CT_ONEDNN_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>

#include "ctorch/core.h"

/* The process's CPU engine and its stream; NULL (with an error) when oneDNN cannot make them. */
dnnl_engine_t ct_onednn_engine(void);
dnnl_stream_t ct_onednn_stream(void);

/* A failed oneDNN call as ctorch's error: CT_ERR_OUT_OF_MEMORY or CT_ERR_BACKEND, naming what
 * was being done. */
ct_status ct_onednn_error(dnnl_status_t status, const char *what);

/* What a cached entry holds: a primitive and whatever the op made with it (reorders, buffers),
 * freed by destroy. */
typedef struct ct_onednn_entry {
    void *value;
    void (*destroy)(void *value);
} ct_onednn_entry;

/* A key: the bytes of a struct that names everything a primitive depends on (zero its padding).
 * Keys longer than this are not cached. */
#define CT_ONEDNN_KEY_MAX 256

/* The cache is locked from ct_onednn_lookup to ct_onednn_release: oneDNN primitives and the
 * buffers an entry keeps run one call at a time, which is how ctorch's CPU device runs anyway.
 * lookup returns the entry of key, made by make(context, &entry) the first time (the least
 * recently used entry makes room when the cache is full), or NULL with ctorch's error set by make.
 * Always pair with ct_onednn_release, found or not. */
const ct_onednn_entry *ct_onednn_lookup(const void *key, size_t key_size,
                                        ct_status (*make)(const void *context, ct_onednn_entry *entry),
                                        const void *context);
void ct_onednn_release(void);

/* How many entries the cache holds (tests) and drops them all (ct_empty_cache on the CPU). */
int ct_onednn_cache_size(void);
void ct_onednn_cache_clear(void);

/* A plain memory descriptor of `ndims` dims and strides in elements. */
ct_status ct_onednn_plain_md(dnnl_memory_desc_t *md, int ndims, const dnnl_dims_t dims,
                             const dnnl_dims_t strides, dnnl_data_type_t type);
/* dnnl's type for a ctorch dtype (float32, bfloat16, float16); false for the others. */
bool ct_onednn_type(int ct_dtype_value, dnnl_data_type_t *type);

/* The address of element `offset` of a buffer of dtype (what a memory object is handed). */
static inline void *ct_onednn_element(void *base, long offset, ct_dtype dtype)
{
    return (char *)base + (size_t)offset * ct_dtype_size(dtype);
}

/* Runs a primitive with `count` arguments on the stream and waits. */
ct_status ct_onednn_execute(dnnl_primitive_t primitive, int count, const dnnl_exec_arg_t *args,
                            const char *what);

/* The OpenMP thread count a piece of work runs on: 1 where `work` is below `parallel_min_work`,
 * the size where the threads pay for waking them (a product's is CT_CPU_GEMM_PARALLEL_MIN_WORK
 * multiply-adds, cpu_blas_threads.h), set for the calling thread until
 * ct_onednn_threads_restore(previous). */
int ct_onednn_threads_for(int64_t work, int64_t parallel_min_work);
void ct_onednn_threads_restore(int previous);
/* The calling thread's OpenMP thread count now (part of a primitive's key: oneDNN splits its work
 * when the primitive is made). */
int ct_onednn_threads_now(void);

#endif
