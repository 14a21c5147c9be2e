#ifndef CT_ALLOC_INTERNAL_H
#define CT_ALLOC_INTERNAL_H

#include "alloc/caching_allocator.h"

/* Frees a block from ct_pinned_malloc. */
void ct_pinned_free(ct_block *block);

#endif
