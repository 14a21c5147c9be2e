/* The per-thread last error: a status and a one-line message. */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Where a message does not fit, the echo of the input is what gives way, never the reason: the
 * longest quoted part ('...' or "...") is cut in its middle to "..." until the message fits.
 * Returns false when no quoted part is long enough to cut. */
static bool shorten_longest_quote(char *message, size_t *length, size_t limit)
{
    size_t best_start = 0, best_length = 0;
    for (size_t i = 0; i < *length; i++) {
        char quote = message[i];
        if (quote != '\'' && quote != '"') continue;
        /* An opening quote starts a word (an apostrophe, as in "tensor's", does not)... */
        if (i > 0 && !strchr(" (=:[,", message[i - 1])) continue;
        /* ...and its closing one ends it. */
        const char *close = message + i;
        do close = memchr(close + 1, quote, *length - (size_t)(close - message) - 1);
        while (close && isalnum((unsigned char)close[1]));
        if (!close) continue;
        size_t inner = (size_t)(close - message) - i - 1;
        if (inner > best_length) best_start = i + 1, best_length = inner;
        i = (size_t)(close - message);
    }
    const size_t keep_min = 40; /* enough of each end of the input to recognise it */
    if (best_length <= keep_min + 3) return false;
    size_t excess = *length - limit;
    size_t keep = best_length > excess + 3 + keep_min ? best_length - excess - 3 : keep_min;
    size_t head = keep / 2, tail = keep - head;
    char *cut = message + best_start + head;
    memcpy(cut, "...", 3);
    memmove(cut + 3, message + best_start + best_length - tail, *length - (best_start + best_length - tail) + 1);
    *length -= best_length - keep - 3;
    return true;
}

static void record(ct_status status, const char *fmt, va_list args)
{
    last_status = status;
    va_list again;
    va_copy(again, args);
    int needed = vsnprintf(last_message, sizeof last_message, fmt, args);
    if (needed >= (int)sizeof last_message) {
        char *whole = malloc((size_t)needed + 1);
        if (whole) {
            vsnprintf(whole, (size_t)needed + 1, fmt, again);
            size_t length = (size_t)needed, limit = sizeof last_message - 1;
            while (length > limit && shorten_longest_quote(whole, &length, limit)) {}
            snprintf(last_message, sizeof last_message, "%s", whole);
            free(whole);
        }
    }
    va_end(again);
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
    case CT_ERR_CAPTURE: return "CT_ERR_CAPTURE";
    }
    return "CT_ERR_UNKNOWN";
}
