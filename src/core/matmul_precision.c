/* torch.set_float32_matmul_precision: whether float32 matrix products may use TF32 on CUDA. It
 * lives in the core layer, not in ops beside ct_matmul, because the CUDA backend (below ops)
 * reads it at every product. One value per process, as PyTorch's; atomic, since products are
 * issued from any thread (DataParallel's workers among them). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

/* Indices into names; -1: CTORCH_ALLOW_TF32 not read yet. */
enum { HIGHEST, HIGH, MEDIUM };
static const char *const names[] = {"highest", "high", "medium"};
static atomic_int precision = -1;

static int precision_from_environment(void)
{
    const char *text = getenv("CTORCH_ALLOW_TF32");
    if (!text || !text[0] || strcmp(text, "0") == 0) return HIGHEST;
    if (strcmp(text, "1") == 0) return HIGH;
    /* An environment variable has no caller to return a status to: say so and keep the default. */
    fprintf(stderr, "ctorch: CTORCH_ALLOW_TF32='%s' is neither 1 (allow TF32: precision \"high\") nor 0 "
            "(\"highest\", the default); using \"highest\"\n", text);
    return HIGHEST;
}

static int current(void)
{
    int value = atomic_load(&precision);
    if (value < 0) {
        int expected = -1;
        value = precision_from_environment();
        /* A set that raced the first read wins over the environment's default. */
        if (!atomic_compare_exchange_strong(&precision, &expected, value)) value = expected;
    }
    return value;
}

ct_status ct_set_float32_matmul_precision(const char *text)
{
    if (!text)
        return ct_error(CT_ERR_NULL_ARGUMENT, "ct_set_float32_matmul_precision: the precision is NULL; "
                        "use \"highest\", \"high\" or \"medium\"");
    for (int i = 0; i < (int)CT_ARRAY_LEN(names); i++)
        if (strcmp(text, names[i]) == 0) {
            atomic_store(&precision, i);
            return CT_OK;
        }
    return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_set_float32_matmul_precision: '%s' is not a precision; "
                    "use \"highest\" (float32, the default), \"high\" or \"medium\" (TF32 allowed on CUDA)",
                    text);
}

const char *ct_get_float32_matmul_precision(void) { return names[current()]; }

bool ct_float32_matmul_allows_tf32(void) { return current() != HIGHEST; }
