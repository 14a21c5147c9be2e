/* The list of every kernel, and their ids. Each kernel family lists its kernels in
 * <family>_list.h and writes them in <family>.ct; a backend compiles the .ct sources and maps
 * each id to its compiled kernel, so adding a kernel never touches a backend. */
#ifndef CT_KERNEL_IDS_H
#define CT_KERNEL_IDS_H

#include "ctorch/core.h"
#include "kernels/kernel_params.h"

/* X(base##_f32) ... for each dtype suffix. */
#define CT_LIST_EACH_DTYPE(X, base) X(base##_f32) X(base##_f64) X(base##_i32) X(base##_i64) \
    X(base##_u8) X(base##_b8)
#define CT_LIST_EACH_NUMERIC(X, base) X(base##_f32) X(base##_f64) X(base##_i32) X(base##_i64) \
    X(base##_u8)
#define CT_LIST_EACH_FLOAT(X, base) X(base##_f32) X(base##_f64)
#define CT_LIST_EACH_HALF(X, base) X(base##_f16) X(base##_bf16)
#define CT_LIST_EACH_STORED_DTYPE(X, base) CT_LIST_EACH_DTYPE(X, base) CT_LIST_EACH_HALF(X, base)

#include "kernels/attention_list.h"
#include "kernels/batch_norm_list.h"
#include "kernels/copy_list.h"
#include "kernels/elementwise_list.h"
#include "kernels/embedding_list.h"
#include "kernels/fill_list.h"
#include "kernels/index_list.h"
#include "kernels/layer_norm_list.h"
#include "kernels/nn_list.h"
#include "kernels/optim_list.h"
#include "kernels/random_list.h"
#include "kernels/reduce_list.h"
#include "kernels/rows_list.h"
#include "kernels/softmax_list.h"

#define CT_KERNEL_LIST(X)                                                                        \
    CT_FILL_KERNELS(X) CT_COPY_KERNELS(X) CT_ELEMENTWISE_KERNELS(X) CT_RANDOM_KERNELS(X)         \
    CT_REDUCE_KERNELS(X) CT_SOFTMAX_KERNELS(X) CT_INDEX_KERNELS(X) CT_NN_KERNELS(X)            \
    CT_BATCH_NORM_KERNELS(X) CT_OPTIM_KERNELS(X) CT_ROWS_KERNELS(X) CT_LAYER_NORM_KERNELS(X)      \
    CT_EMBEDDING_KERNELS(X) CT_ATTENTION_KERNELS(X)

/* The kernel sources, in the order a backend compiles them (after dialect.h). One line: CMake
 * reads the families from it. */
#define CT_KERNEL_SOURCES(X) X(fill) X(copy) X(elementwise) X(random) X(reduce) X(softmax) X(index) X(nn) X(batch_norm) X(optim) X(rows) X(layer_norm) X(embedding) X(attention)
/* A family's index: its place in CT_KERNEL_SOURCES, and in kernel_sources.h's tables. */
#define CT_KERNEL_FAMILY_ENUM_ENTRY(family) CT_KERNEL_FAMILY_##family,
enum { CT_KERNEL_SOURCES(CT_KERNEL_FAMILY_ENUM_ENTRY) CT_KERNEL_FAMILY_COUNT };
#undef CT_KERNEL_FAMILY_ENUM_ENTRY

#define CT_KERNEL_ENUM_ENTRY(name) CT_K_##name,
typedef enum ct_kernel_id {
    CT_K_NONE = 0, /* "no kernel for this dtype" in the tables below */
    CT_KERNEL_LIST(CT_KERNEL_ENUM_ENTRY) CT_KERNEL_COUNT
} ct_kernel_id;
#undef CT_KERNEL_ENUM_ENTRY

/* Tables from dtype to kernel id, for the ops: CT_KERNELS_BY_DTYPE(fill)[CT_F32] is fill_f32. */
#define CT_KERNELS_BY_DTYPE(base)                                                                \
    {[CT_F32] = CT_K_##base##_f32, [CT_F64] = CT_K_##base##_f64, [CT_I32] = CT_K_##base##_i32,   \
     [CT_I64] = CT_K_##base##_i64, [CT_U8] = CT_K_##base##_u8, [CT_BOOL] = CT_K_##base##_b8}
#define CT_KERNELS_BY_NUMERIC_DTYPE(base)                                                        \
    {[CT_F32] = CT_K_##base##_f32, [CT_F64] = CT_K_##base##_f64, [CT_I32] = CT_K_##base##_i32,   \
     [CT_I64] = CT_K_##base##_i64, [CT_U8] = CT_K_##base##_u8, [CT_BOOL] = CT_K_NONE}
#define CT_KERNELS_BY_FLOAT_DTYPE(base)                                                          \
    {[CT_F32] = CT_K_##base##_f32, [CT_F64] = CT_K_##base##_f64}
/* The same with the 16-bit floating dtypes, for the families whose kernels take them. */
#define CT_KERNELS_BY_STORED_DTYPE(base)                                                         \
    {[CT_F32] = CT_K_##base##_f32, [CT_F64] = CT_K_##base##_f64, [CT_I32] = CT_K_##base##_i32,   \
     [CT_I64] = CT_K_##base##_i64, [CT_U8] = CT_K_##base##_u8, [CT_BOOL] = CT_K_##base##_b8,     \
     [CT_F16] = CT_K_##base##_f16, [CT_BF16] = CT_K_##base##_bf16}
#define CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(base)                                                \
    {[CT_F32] = CT_K_##base##_f32, [CT_F64] = CT_K_##base##_f64, [CT_I32] = CT_K_##base##_i32,   \
     [CT_I64] = CT_K_##base##_i64, [CT_U8] = CT_K_##base##_u8, [CT_BOOL] = CT_K_NONE,            \
     [CT_F16] = CT_K_##base##_f16, [CT_BF16] = CT_K_##base##_bf16}
#define CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(base)                                                  \
    {[CT_F32] = CT_K_##base##_f32, [CT_F64] = CT_K_##base##_f64, [CT_F16] = CT_K_##base##_f16,   \
     [CT_BF16] = CT_K_##base##_bf16}

/* How many buffers a launch of the kernel passes: CT_KERNEL_WIDE_BUFFERS for the multi-tensor
 * kernels, CT_KERNEL_MAX_BUFFERS for every other (kernel_params.h). Inline: the CUDA stand-in
 * asks it too. */
#define CT_KERNEL_WIDE_CASE(name) case CT_K_##name:
static inline int ct_kernel_buffer_count(ct_kernel_id id)
{
    switch (id) {
    CT_OPTIM_MULTI_KERNELS(CT_KERNEL_WIDE_CASE)
    CT_OPTIM_MULTI_REDUCE_KERNELS(CT_KERNEL_WIDE_CASE)
    CT_ATTENTION_KERNELS(CT_KERNEL_WIDE_CASE)
        return CT_KERNEL_WIDE_BUFFERS;
    default:
        return CT_KERNEL_MAX_BUFFERS;
    }
}
#undef CT_KERNEL_WIDE_CASE

/* "fill_f32": the name the kernel has in its source. */
const char *ct_kernel_name(ct_kernel_id id);
/* The index of the family (src/kernels/<family>.ct) that defines the kernel; -1 for no kernel. A
 * backend that compiles families at run time builds this one for the kernel's first launch. */
int ct_kernel_family_of(ct_kernel_id id);
/* "fill": that family's name; NULL for no kernel. */
const char *ct_kernel_family(ct_kernel_id id);
/* The index of the family named `family`; -1 for NULL or a name that is no family. */
int ct_kernel_family_index(const char *family);

#endif
