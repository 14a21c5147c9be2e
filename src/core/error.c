/* The per-thread last error: a status and a one-line message. */
#include <stdarg.h>
#include <stdio.h>

#include "core/core_internal.h"

#define CT_ERROR_MESSAGE_MAX 1024

static _Thread_local ct_status last_status = CT_OK;
static _Thread_local char last_message[CT_ERROR_MESSAGE_MAX];

ct_status ct_last_error(void) { return last_status; }

const char *ct_last_error_message(void) { return last_message; }

void ct_clear_error(void)
{
    last_status = CT_OK;
    last_message[0] = '\0';
}

static void record(ct_status status, const char *fmt, va_list args)
{
    last_status = status;
    vsnprintf(last_message, sizeof last_message, fmt, args);
    ct_log_message(CT_LOG_DEBUG, "%s: %s", ct_status_name(status), last_message);
}

ct_status ct_error(ct_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    record(status, fmt, args);
    va_end(args);
    return status;
}

void *ct_error_null(ct_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    record(status, fmt, args);
    va_end(args);
    return NULL;
}

void *ct_null_argument(const char *function, const char *argument)
{
    if (last_status == CT_OK)
        ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument '%s' is NULL (an earlier call failed or it was "
                 "never set)", function, argument);
    return NULL;
}

const char *ct_status_name(ct_status status)
{
    switch (status) {
    case CT_OK: return "CT_OK";
    case CT_ERR_INVALID_ARGUMENT: return "CT_ERR_INVALID_ARGUMENT";
    case CT_ERR_NULL_ARGUMENT: return "CT_ERR_NULL_ARGUMENT";
    case CT_ERR_SHAPE: return "CT_ERR_SHAPE";
    case CT_ERR_DTYPE: return "CT_ERR_DTYPE";
    case CT_ERR_DEVICE: return "CT_ERR_DEVICE";
    case CT_ERR_INDEX: return "CT_ERR_INDEX";
    case CT_ERR_NOT_COMPILED: return "CT_ERR_NOT_COMPILED";
    case CT_ERR_UNAVAILABLE: return "CT_ERR_UNAVAILABLE";
    case CT_ERR_OUT_OF_MEMORY: return "CT_ERR_OUT_OF_MEMORY";
    case CT_ERR_IO: return "CT_ERR_IO";
    case CT_ERR_BACKEND: return "CT_ERR_BACKEND";
    case CT_ERR_INTERNAL: return "CT_ERR_INTERNAL";
    case CT_END_OF_DATA: return "CT_END_OF_DATA";
    case CT_ERR_TIMEOUT: return "CT_ERR_TIMEOUT";
    }
    return "CT_ERR_UNKNOWN";
}
