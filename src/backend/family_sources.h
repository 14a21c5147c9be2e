/* What the backends that compile kernels at run time (OpenCL, NVRTC) compile for a kernel family:
 * the prelude, then the family's embedded source, or the source a test put in its place. Each
 * backend keeps its own replacements, so that a test replacing a family on one backend leaves
 * the others' as they are. */
#ifndef CT_FAMILY_SOURCES_H
#define CT_FAMILY_SOURCES_H

#include <pthread.h>

#include "ctorch/core.h"
#include "kernels/kernel_ids.h"

typedef struct ct_family_sources {
    pthread_mutex_t lock;
    char *replacements[CT_KERNEL_FAMILY_COUNT]; /* NULL: the embedded source */
} ct_family_sources;
#define CT_FAMILY_SOURCES_INIT {PTHREAD_MUTEX_INITIALIZER, {NULL}}

/* The program text of family (an index of ct_kernel_family_index), malloc'ed; NULL when out of
 * memory. */
char *ct_family_program_text(ct_family_sources *sources, int family);

/* Tests only: family's source becomes a copy of `source` (NULL: the embedded one again), and its
 * index goes to *index. CT_ERR_INVALID_ARGUMENT for a name that is no family; the error messages
 * start with `caller`. */
ct_status ct_family_sources_replace(ct_family_sources *sources, const char *caller,
                                    const char *family, const char *source, int *index);

#endif
