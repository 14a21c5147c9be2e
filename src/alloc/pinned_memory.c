/* Pinned (page-locked) host memory, which devices copy from and to at full speed and which
 * queued copies need. Asked of the accelerator backends, since pinning is theirs to do. */
#include <stdlib.h>

#include "alloc/alloc_internal.h"
#include "core/core_internal.h"
#include "device/backend_interface.h"

/* A dummy handle for plain memory, so that every block from here frees through here. */
static char plain_memory_token;

ct_block *ct_pinned_malloc(size_t bytes)
{
    ct_block *block = calloc(1, sizeof *block);
    if (!block) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory for a pinned block record");
    block->device = CT_DEVICE_CPU;
    block->size = bytes ? bytes : 1;
    static const ct_device_type accelerators[] = {CT_CUDA, CT_OPENCL};
    for (size_t i = 0; i < CT_ARRAY_LEN(accelerators); i++) {
        ct_device_type type = accelerators[i];
        if (ct_device_count(type) == 0 || !ct_backend_table[type]->pinned_alloc) continue;
        ct_device by = ct_current_device(type);
        block->handle = ct_backend_table[type]->pinned_alloc(by.index, block->size, &block->pinned_handle);
        if (block->handle) {
            block->pinned = true;
            block->pinned_by = by;
            return block;
        }
    }
    size_t rounded = (block->size + 4095) / 4096 * 4096;
    block->handle = rounded >= block->size ? aligned_alloc(4096, rounded) : NULL;
    if (!block->handle) {
        char asked[32];
        free(block);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "out of host memory: tried to allocate %s of "
                             "pinned memory", ct_format_bytes((double)bytes, asked, sizeof asked));
    }
    block->pinned_handle = &plain_memory_token;
    return block;
}

void ct_pinned_free(ct_block *block)
{
    if (block->pinned)
        ct_backend_table[block->pinned_by.type]->pinned_free(block->pinned_by.index, block->handle,
                                                             block->pinned_handle);
    else
        free(block->handle);
    free(block);
}
