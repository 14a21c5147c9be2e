/* The program text of a kernel family, and the tests' replacements (family_sources.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/family_sources.h"
#include "core/core_internal.h"
#include "kernels/kernel_sources.h"

char *ct_family_program_text(ct_family_sources *sources, int family)
{
    pthread_mutex_lock(&sources->lock);
    const char *source = sources->replacements[family] ? sources->replacements[family]
                                                       : ct_kernel_family_sources[family];
    size_t size = strlen(ct_kernel_source_prelude) + strlen(source) + 2;
    char *text = malloc(size);
    if (text) snprintf(text, size, "%s\n%s", ct_kernel_source_prelude, source);
    pthread_mutex_unlock(&sources->lock);
    return text;
}

ct_status ct_family_sources_replace(ct_family_sources *sources, const char *caller,
                                    const char *family, const char *source, int *index)
{
    int f = ct_kernel_family_index(family);
    if (f < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' is not a kernel family", caller,
                        family ? family : "(null)");
    char *copy = NULL;
    if (source && !(copy = strdup(source)))
        return ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no memory for the source", caller);
    pthread_mutex_lock(&sources->lock);
    free(sources->replacements[f]);
    sources->replacements[f] = copy;
    pthread_mutex_unlock(&sources->lock);
    *index = f;
    return CT_OK;
}
