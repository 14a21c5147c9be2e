/* oneDNN's engine, stream and ctorch's cache of primitives (onednn_engine.h). */
#include <pthread.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_blas_threads.h"
#include "backend/cpu/onednn_engine.h"
#include "core/core_internal.h"

/* Entries kept: a model's products and convolutions, forward and backward, at a few batch sizes
 * (the digits cnn's step uses 9). Each holds a primitive and, for a convolution, its reordered
 * buffers, so the bound is also one on memory. */
#define CT_ONEDNN_CACHE_ENTRIES 128

typedef struct slot {
    bool used;
    uint64_t hash, last_use;
    size_t key_size;
    unsigned char key[CT_ONEDNN_KEY_MAX];
    ct_onednn_entry entry;
} slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot slots[CT_ONEDNN_CACHE_ENTRIES];
static uint64_t clock_ticks;

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_stream_t stream;
static dnnl_status_t engine_status = dnnl_success;

static void make_engine(void)
{
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    if (engine_status == dnnl_success)
        engine_status = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
}

ct_status ct_onednn_error(dnnl_status_t status, const char *what)
{
    if (status == dnnl_out_of_memory)
        return ct_error(CT_ERR_OUT_OF_MEMORY, "cpu: oneDNN ran out of host memory %s", what);
    return ct_error(CT_ERR_BACKEND, "cpu: oneDNN failed %s (dnnl_status %d)", what, (int)status);
}

dnnl_engine_t ct_onednn_engine(void)
{
    pthread_once(&engine_once, make_engine);
    if (engine_status != dnnl_success) {
        ct_onednn_error(engine_status, "to create its CPU engine");
        return NULL;
    }
    return engine;
}

dnnl_stream_t ct_onednn_stream(void) { return ct_onednn_engine() ? stream : NULL; }

/* FNV-1a */
static uint64_t hash_of(const unsigned char *bytes, size_t size)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++) h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
}

static void drop(slot *s)
{
    if (s->used && s->entry.destroy) s->entry.destroy(s->entry.value);
    memset(s, 0, sizeof *s);
}

const ct_onednn_entry *ct_onednn_lookup(const void *key, size_t key_size,
                                        ct_status (*make)(const void *context, ct_onednn_entry *entry),
                                        const void *context)
{
    pthread_mutex_lock(&lock);
    if (key_size > CT_ONEDNN_KEY_MAX) {
        ct_error(CT_ERR_INTERNAL, "cpu: a oneDNN cache key of %zu bytes (at most %d)", key_size,
                 CT_ONEDNN_KEY_MAX);
        return NULL;
    }
    uint64_t h = hash_of(key, key_size);
    slot *oldest = &slots[0];
    for (int i = 0; i < CT_ONEDNN_CACHE_ENTRIES; i++) {
        slot *s = &slots[i];
        if (s->used && s->hash == h && s->key_size == key_size && memcmp(s->key, key, key_size) == 0) {
            s->last_use = ++clock_ticks;
            return &s->entry;
        }
        if (!s->used || (oldest->used && s->last_use < oldest->last_use)) oldest = s;
    }
    ct_onednn_entry made = {0};
    if (make(context, &made) != CT_OK) return NULL;
    drop(oldest);
    oldest->used = true;
    oldest->hash = h;
    oldest->last_use = ++clock_ticks;
    oldest->key_size = key_size;
    memcpy(oldest->key, key, key_size);
    oldest->entry = made;
    return &oldest->entry;
}

void ct_onednn_release(void) { pthread_mutex_unlock(&lock); }

int ct_onednn_cache_size(void)
{
    pthread_mutex_lock(&lock);
    int count = 0;
    for (int i = 0; i < CT_ONEDNN_CACHE_ENTRIES; i++) count += slots[i].used;
    pthread_mutex_unlock(&lock);
    return count;
}

void ct_onednn_cache_clear(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < CT_ONEDNN_CACHE_ENTRIES; i++) drop(&slots[i]);
    pthread_mutex_unlock(&lock);
}

ct_status ct_onednn_plain_md(dnnl_memory_desc_t *md, int ndims, const dnnl_dims_t dims,
                             const dnnl_dims_t strides, dnnl_data_type_t type)
{
    dnnl_status_t status = dnnl_memory_desc_init_by_strides(md, ndims, dims, type, strides);
    return status == dnnl_success ? CT_OK : ct_onednn_error(status, "to describe a tensor's memory");
}

bool ct_onednn_type(int dtype, dnnl_data_type_t *type)
{
    switch (dtype) {
    case CT_F32: *type = dnnl_f32; return true;
    case CT_BF16: *type = dnnl_bf16; return true;
    case CT_F16: *type = dnnl_f16; return true;
    default: return false;
    }
}

ct_status ct_onednn_execute(dnnl_primitive_t primitive, int count, const dnnl_exec_arg_t *args,
                            const char *what)
{
    dnnl_status_t status = dnnl_primitive_execute(primitive, stream, count, args);
    if (status == dnnl_success) status = dnnl_stream_wait(stream);
    return status == dnnl_success ? CT_OK : ct_onednn_error(status, what);
}

int ct_onednn_threads_for(int64_t work, int64_t parallel_min_work)
{
#ifdef _OPENMP
    int previous = omp_get_max_threads();
    if (work < parallel_min_work && previous > 1) omp_set_num_threads(1);
    return previous;
#else
    (void)work;
    (void)parallel_min_work;
    return 1;
#endif
}

void ct_onednn_threads_restore(int previous)
{
#ifdef _OPENMP
    if (omp_get_max_threads() != previous) omp_set_num_threads(previous);
#else
    (void)previous;
#endif
}

int ct_onednn_threads_now(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
