#include <string.h>

#include "kernels/kernel_ids.h"
#include "kernels/kernel_sources.h"

#define CT_KERNEL_NAME_ENTRY(name) [CT_K_##name] = #name,
static const char *const kernel_names[CT_KERNEL_COUNT] = {
    [CT_K_NONE] = "none",
    CT_KERNEL_LIST(CT_KERNEL_NAME_ENTRY)
};

const char *ct_kernel_name(ct_kernel_id id)
{
    return (id >= 0 && id < CT_KERNEL_COUNT) ? kernel_names[id] : "invalid";
}

/* The family (the .ct source) of each kernel. */
#define CT_KERNEL_IN_FILL(name) [CT_K_##name] = CT_KERNEL_FAMILY_fill,
#define CT_KERNEL_IN_COPY(name) [CT_K_##name] = CT_KERNEL_FAMILY_copy,
#define CT_KERNEL_IN_ELEMENTWISE(name) [CT_K_##name] = CT_KERNEL_FAMILY_elementwise,
#define CT_KERNEL_IN_RANDOM(name) [CT_K_##name] = CT_KERNEL_FAMILY_random,
#define CT_KERNEL_IN_REDUCE(name) [CT_K_##name] = CT_KERNEL_FAMILY_reduce,
#define CT_KERNEL_IN_SOFTMAX(name) [CT_K_##name] = CT_KERNEL_FAMILY_softmax,
#define CT_KERNEL_IN_INDEX(name) [CT_K_##name] = CT_KERNEL_FAMILY_index,
#define CT_KERNEL_IN_NN(name) [CT_K_##name] = CT_KERNEL_FAMILY_nn,
#define CT_KERNEL_IN_BATCH_NORM(name) [CT_K_##name] = CT_KERNEL_FAMILY_batch_norm,
#define CT_KERNEL_IN_OPTIM(name) [CT_K_##name] = CT_KERNEL_FAMILY_optim,
#define CT_KERNEL_IN_ROWS(name) [CT_K_##name] = CT_KERNEL_FAMILY_rows,
#define CT_KERNEL_IN_LAYER_NORM(name) [CT_K_##name] = CT_KERNEL_FAMILY_layer_norm,
#define CT_KERNEL_IN_EMBEDDING(name) [CT_K_##name] = CT_KERNEL_FAMILY_embedding,
#define CT_KERNEL_IN_ATTENTION(name) [CT_K_##name] = CT_KERNEL_FAMILY_attention,
static const signed char kernel_families[CT_KERNEL_COUNT] = {
    CT_FILL_KERNELS(CT_KERNEL_IN_FILL) CT_COPY_KERNELS(CT_KERNEL_IN_COPY)
    CT_ELEMENTWISE_KERNELS(CT_KERNEL_IN_ELEMENTWISE) CT_RANDOM_KERNELS(CT_KERNEL_IN_RANDOM)
    CT_REDUCE_KERNELS(CT_KERNEL_IN_REDUCE) CT_SOFTMAX_KERNELS(CT_KERNEL_IN_SOFTMAX)
    CT_INDEX_KERNELS(CT_KERNEL_IN_INDEX)
    CT_NN_KERNELS(CT_KERNEL_IN_NN) CT_BATCH_NORM_KERNELS(CT_KERNEL_IN_BATCH_NORM)
    CT_OPTIM_KERNELS(CT_KERNEL_IN_OPTIM) CT_ROWS_KERNELS(CT_KERNEL_IN_ROWS)
    CT_LAYER_NORM_KERNELS(CT_KERNEL_IN_LAYER_NORM)
    CT_EMBEDDING_KERNELS(CT_KERNEL_IN_EMBEDDING)
    CT_ATTENTION_KERNELS(CT_KERNEL_IN_ATTENTION)
};

int ct_kernel_family_of(ct_kernel_id id)
{
    return (id > CT_K_NONE && id < CT_KERNEL_COUNT) ? kernel_families[id] : -1;
}

const char *ct_kernel_family(ct_kernel_id id)
{
    int family = ct_kernel_family_of(id);
    return family >= 0 ? ct_kernel_family_names[family] : NULL;
}

int ct_kernel_family_index(const char *family)
{
    for (int f = 0; family && f < CT_KERNEL_FAMILY_COUNT; f++)
        if (strcmp(ct_kernel_family_names[f], family) == 0) return f;
    return -1;
}
