/* Internal helpers of the core layer: recording errors, logging, byte sizes. */
#ifndef CT_CORE_INTERNAL_H
#define CT_CORE_INTERNAL_H

#include <stdlib.h>
#include <string.h>

#include "ctorch/core.h"

#define CT_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))

/* Records status and a one-line message for this thread and returns status. */
ct_status ct_error(ct_status status, const char *fmt, ...) CT_PRINTF(2, 3);
/* The same, returning NULL, for calls that return pointers. */
void *ct_error_null(ct_status status, const char *fmt, ...) CT_PRINTF(2, 3);
/* For a NULL argument: keeps an error already recorded (the first error of a chain), otherwise
 * records CT_ERR_NULL_ARGUMENT naming the argument and the call. Returns NULL. */
void *ct_null_argument(const char *function, const char *argument);

/* Whether float32 matrix products may use TF32 (ct_set_float32_matmul_precision "high" or
 * "medium", or CTORCH_ALLOW_TF32=1): read by the CUDA backend at every product. */
bool ct_float32_matmul_allows_tf32(void);

void ct_log_message(ct_log_level level, const char *fmt, ...) CT_PRINTF(2, 3);

/* "1.50 GiB" into buf. */
const char *ct_format_bytes(double bytes, char *buf, size_t size);

#define CT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* size zeroed bytes from malloc, for the records every op makes and frees (tensors, storages,
 * graph nodes): glibc's calloc bypasses its per-thread cache (35 ns a calloc and free here, 18
 * through malloc). explicit_bzero, because gcc turns malloc and memset back into calloc. */
static inline void *ct_zalloc(size_t size)
{
    void *p = malloc(size);
    if (p) explicit_bzero(p, size);
    return p;
}

#endif
