/* The CPU backend: host memory, memcpy for copies, kernels in OpenMP loops, OpenBLAS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/cpu_backend.h"
#include "core/core_internal.h"
#include "startup/before_libraries.h"
#include "startup/cpu_features.h"

static bool cpu_init(char *reason, size_t reason_size)
{
    (void)reason;
    (void)reason_size;
    /* The call also keeps libctorch_startup among the libraries the linker records (one that links
     * with --as-needed drops a library whose functions are never called). */
    int set = ct_startup_environment_set();
    if (set)
        ct_log_message(CT_LOG_DEBUG, "cpu: set by ctorch before the libraries started:%s%s%s%s",
                       set & CT_STARTUP_SET_GOMP_SPINCOUNT ? " GOMP_SPINCOUNT=" CT_STARTUP_SPIN : "",
                       set & CT_STARTUP_SET_OPENBLAS_THREAD_TIMEOUT ? " OPENBLAS_THREAD_TIMEOUT=4" : "",
                       set & CT_STARTUP_SET_OPENBLAS_CORETYPE ? " OPENBLAS_CORETYPE=" : "",
                       set & CT_STARTUP_SET_OPENBLAS_CORETYPE ? ct_startup_openblas_coretype() : "");
    /* The permission is the whole process's (its threads', now and later), asked once.
     * oneDNN asks for it itself (2.6.3: src/cpu/x64/cpu_isa_traits.cpp, amx::init, at its first
     * check for AMX), so that is not what lets oneDNN use AMX; asked here, ctorch knows and reports
     * whether AMX can run (ct_cpu_get_info; a refusal shows as oneDNN's kernels below the CPU), and
     * AMX code of its own may run. */
    if (ct_cpu_features_get()->has.amx_tile) (void)ct_cpu_request_amx_permission();
    ct_cpu_warn_slow_matrix_engines();
    return true;
}

static int cpu_device_count(void) { return 1; }

/* A field of /proc/meminfo in bytes, or 0. */
static size_t meminfo_bytes(const char *field)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    size_t value = 0, field_length = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, field_length) == 0 && line[field_length] == ':') {
            value = (size_t)strtoull(line + field_length + 1, NULL, 10) * 1024;
            break;
        }
    fclose(f);
    return value;
}

void ct_cpu_model_name(char *buf, size_t size)
{
    snprintf(buf, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *value = strchr(line, ':');
        if (!value) break;
        value++;
        while (*value == ' ') value++;
        snprintf(buf, size, "%s", value);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
}

static ct_status cpu_get_properties(int index, ct_device_props *props)
{
    (void)index;
    ct_cpu_model_name(props->name, sizeof props->name);
    snprintf(props->vendor, sizeof props->vendor, "host");
    snprintf(props->driver_version, sizeof props->driver_version, "ctorch %s", CT_VERSION_STRING);
    props->total_memory = meminfo_bytes("MemTotal");
    props->max_allocation = props->total_memory;
#ifdef _OPENMP
    props->compute_units = omp_get_max_threads();
#else
    props->compute_units = (int)sysconf(_SC_NPROCESSORS_ONLN);
#endif
    props->is_gpu = false;
    return CT_OK;
}

static ct_status cpu_mem_get_info(int index, size_t *free_bytes, size_t *total_bytes)
{
    (void)index;
    *total_bytes = meminfo_bytes("MemTotal");
    *free_bytes = meminfo_bytes("MemAvailable");
    return CT_OK;
}

/* Large blocks start on a page so that copies between them avoid 4K aliasing. */
static ct_status cpu_raw_alloc(int index, size_t bytes, void **handle)
{
    (void)index;
    size_t alignment = bytes >= (1u << 20) ? 4096 : 64;
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    *handle = rounded < bytes ? NULL : aligned_alloc(alignment, rounded);
    return *handle ? CT_OK : CT_ERR_OUT_OF_MEMORY;
}

static void cpu_raw_free(int index, void *handle)
{
    (void)index;
    free(handle);
}

static ct_status cpu_copy_host_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                         size_t bytes)
{
    (void)index;
    memcpy((char *)dst + dst_offset, src, bytes);
    return CT_OK;
}

static ct_status cpu_copy_device_to_host(int index, void *dst, const void *src, size_t src_offset,
                                         size_t bytes)
{
    (void)index;
    memcpy(dst, (const char *)src + src_offset, bytes);
    return CT_OK;
}

static ct_status cpu_copy_device_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                           size_t src_offset, size_t bytes)
{
    (void)index;
    memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return CT_OK;
}

static ct_status cpu_synchronize(int index)
{
    (void)index;
    return CT_OK; /* CPU work runs to completion before its call returns */
}

/* Streams and events on the CPU: work runs when it is called, in call order, so a stream is only
 * a name and every event has happened by the time anyone can ask. */
static char cpu_queue_token;

static ct_status cpu_stream_create(int index, void **stream)
{
    (void)index;
    *stream = &cpu_queue_token;
    return CT_OK;
}

static void cpu_stream_destroy(int index, void *stream)
{
    (void)index;
    (void)stream;
}

static ct_status cpu_stream_or_event_done(int index, void *handle)
{
    (void)index;
    (void)handle;
    return CT_OK;
}

static ct_status cpu_event_record(int index, void *event, void *stream)
{
    (void)index;
    (void)event;
    (void)stream;
    return CT_OK;
}

static ct_status cpu_event_query(int index, void *event, bool *complete)
{
    (void)index;
    (void)event;
    *complete = true;
    return CT_OK;
}

const ct_backend ct_cpu_backend = {
    .type = CT_CPU,
    .init = cpu_init,
    .device_count = cpu_device_count,
    .get_properties = cpu_get_properties,
    .mem_get_info = cpu_mem_get_info,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .copy_host_to_device = cpu_copy_host_to_device,
    .copy_device_to_host = cpu_copy_device_to_host,
    .copy_device_to_device = cpu_copy_device_to_device,
    .launch = ct_cpu_launch,
    .work_shape = ct_cpu_work_shape,
    .gemm = ct_cpu_gemm,
    .gemm_takes = ct_cpu_gemm_takes,
    .conv2d = ct_cpu_conv2d,
    .conv2d_takes = ct_cpu_conv2d_takes,
    .pool2d = ct_cpu_pool2d,
    .pool2d_takes = ct_cpu_pool2d_takes,
    .attention = ct_cpu_attention,
    .attention_takes = ct_cpu_attention_takes,
    .synchronize = cpu_synchronize,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_or_event_done,
    .event_create = cpu_stream_create,
    .event_destroy = cpu_stream_destroy,
    .event_record = cpu_event_record,
    .stream_wait_event = cpu_event_record,
    .event_synchronize = cpu_stream_or_event_done,
    .event_query = cpu_event_query,
};
