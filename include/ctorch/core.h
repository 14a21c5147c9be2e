/* ctorch core: status codes, the per-thread last error, dtypes, logging. */
#ifndef CTORCH_CORE_H
#define CTORCH_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CT_VERSION_MAJOR 0
#define CT_VERSION_MINOR 1
#define CT_VERSION_PATCH 0
#define CT_VERSION_STRING "0.1.0"

/* Every fallible call returns a status (CT_OK is 0) or a pointer that is NULL on failure.
 * The failure's code and a one-line message are kept per thread: see ct_last_error(). */
typedef enum ct_status {
    CT_OK = 0,
    CT_ERR_INVALID_ARGUMENT, /* a value is outside what the call accepts */
    CT_ERR_NULL_ARGUMENT,    /* a required pointer is NULL */
    CT_ERR_SHAPE,            /* shapes do not fit together */
    CT_ERR_DTYPE,            /* a dtype the call does not support */
    CT_ERR_DEVICE,           /* operands on different devices, or a device that is not there */
    CT_ERR_INDEX,            /* a dim or an index out of range */
    CT_ERR_NOT_COMPILED,     /* the backend was not built into this ctorch */
    CT_ERR_UNAVAILABLE,      /* the backend is built in but has no usable device */
    CT_ERR_OUT_OF_MEMORY,
    CT_ERR_IO,
    CT_ERR_BACKEND,          /* the driver or library underneath failed */
    CT_ERR_INTERNAL,
    CT_END_OF_DATA,          /* not an error: an iterator has nothing more (ct_data_loader_next) */
    CT_ERR_TIMEOUT,          /* other processes did not arrive in time (a collective: ct_dist_set_timeout) */
    CT_ERR_CAPTURE           /* what a graph capture cannot hold (a host sync, ...), or a graph used out of turn */
} ct_status;

/* The status of the last failed call on this thread (CT_OK if none since ct_clear_error). */
ct_status ct_last_error(void);
/* Its one-line message; "" when there is none. Valid until the next failing call on this thread. */
const char *ct_last_error_message(void);
void ct_clear_error(void);
/* "CT_ERR_SHAPE" and so on. */
const char *ct_status_name(ct_status status);

typedef enum ct_dtype {
    CT_F32 = 0,
    CT_F64,
    CT_I32,
    CT_I64,
    CT_U8,
    CT_BOOL,
    CT_F16,  /* IEEE binary16: storage only; kernels compute in float32 and round to nearest even */
    CT_BF16, /* bfloat16 (float32's upper half): the same */
    CT_DTYPE_COUNT
} ct_dtype;

size_t ct_dtype_size(ct_dtype dtype);
/* "float32", "float64", "int32", "int64", "uint8", "bool", "float16", "bfloat16"; "invalid"
 * otherwise. */
const char *ct_dtype_name(ct_dtype dtype);
bool ct_dtype_is_valid(int dtype);
bool ct_dtype_is_floating(ct_dtype dtype); /* float16, bfloat16, float32, float64 */
bool ct_dtype_is_integral(ct_dtype dtype); /* int32, int64, uint8 (not bool) */
/* PyTorch's promotion for two tensors: bool < uint8 < int32 < int64 < {float16, bfloat16} <
 * float32 < float64, where float16 with bfloat16 gives float32. */
ct_dtype ct_promote_types(ct_dtype a, ct_dtype b);

/* The 16-bit floating formats' bits, as c10::Half and c10::BFloat16 convert them: from float32
 * rounded to nearest even (overflow to infinity, NaN stays NaN), to float32 exactly. The kernels
 * convert with the same arithmetic, so every device stores the same bits. */
uint16_t ct_float_to_f16(float value);
float ct_f16_to_float(uint16_t bits);
uint16_t ct_float_to_bf16(float value);
float ct_bf16_to_float(uint16_t bits);

typedef enum ct_log_level { CT_LOG_ERROR = 0, CT_LOG_WARN, CT_LOG_INFO, CT_LOG_DEBUG } ct_log_level;
/* The level is read from CTORCH_LOG (error, warn, info, debug) at first use; this overrides it. */
void ct_set_log_level(ct_log_level level);
ct_log_level ct_get_log_level(void);

#ifdef __cplusplus
}
#endif
#endif
