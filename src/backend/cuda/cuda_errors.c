/* Driver results as text, and the error every failed driver call records. */
#include <stdio.h>

#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

const char *ct_cuda_result_text(CUresult result, char *buf, size_t size)
{
    const char *name = NULL, *text = NULL;
    if (ct_cu) {
        if (ct_cu->cuGetErrorName(result, &name) != CUDA_SUCCESS) name = NULL;
        if (ct_cu->cuGetErrorString(result, &text) != CUDA_SUCCESS) text = NULL;
    }
    if (name && text)
        snprintf(buf, size, "%s (%s)", name, text);
    else
        snprintf(buf, size, "CUDA error %d", (int)result);
    return buf;
}

ct_status ct_cuda_fail(int index, const char *what, CUresult result)
{
    char text[256];
    ct_cuda_result_text(result, text, sizeof text);
    return ct_error(result == CUDA_ERROR_OUT_OF_MEMORY ? CT_ERR_OUT_OF_MEMORY : CT_ERR_BACKEND,
                    "cuda:%d: %s failed: %s", index, what, text);
}
