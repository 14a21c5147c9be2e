/* The caching allocator: one per device, over the backend's raw allocation. Freed blocks go to
 * size-class pools and are reused without calling the driver; a warm training loop makes no
 * device allocations at all. */
#ifndef CT_CACHING_ALLOCATOR_H
#define CT_CACHING_ALLOCATOR_H

#include "ctorch/alloc.h"

typedef struct ct_block {
    void *handle;           /* what the backend returned: a host pointer, a cl_mem, ... */
    size_t size;            /* the size class, >= what was asked */
    ct_device device;
    int size_class;
    struct ct_block *next;  /* in its pool while cached */
    /* Pinned host blocks (device is the CPU): the backend device that pinned it, and its handle. */
    bool pinned;
    ct_device pinned_by;
    void *pinned_handle;
} ct_block;

/* A block of at least `bytes` on a resolved device. On out-of-memory: releases the device's
 * cache, retries once, then records CT_ERR_OUT_OF_MEMORY with the sizes and returns NULL. */
ct_block *ct_caching_allocator_malloc(ct_device device, size_t bytes);
/* Back to its pool (pinned blocks back to their backend). NULL-safe. */
void ct_caching_allocator_free(ct_block *block);

/* Page-locked host memory of at least `bytes`, from the first accelerator backend that has it
 * (CUDA, then OpenCL); page-aligned plain memory, with pinned false, where none has. */
ct_block *ct_pinned_malloc(size_t bytes);

#endif
