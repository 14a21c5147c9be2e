/* The training code's own error message, per thread, beside the library's. */
#include <stdarg.h>
#include <stdio.h>

#include "train.h"

static _Thread_local char message[1024];

const char *ct_train_error_message(void) { return message; }

ct_status ct_train_fail(ct_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return status;
}

ct_status ct_train_fail_library(const char *what)
{
    ct_status status = ct_last_error();
    const char *cause = ct_last_error_message();
    if (status == CT_OK) {
        status = CT_ERR_INTERNAL;
        cause = "failed without saying why";
    }
    snprintf(message, sizeof message, "%s: %s", what, cause);
    return status;
}
