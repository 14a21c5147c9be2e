/* The row kernels (tril/triu, cumsum, sort, multinomial's search), compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/rows.ct"

/* The triangles are elementwise and vectorise across items; the others walk a row (or search
 * one) per item: run item by item (CT_CPU_LAUNCHER_ITEMS). Every kernel of CT_ROWS_KERNELS must
 * be in one of the two lists. */
#define CT_ROWS_VECTOR_KERNELS(X) CT_LIST_EACH_STORED_DTYPE(X, triangle)
#define CT_ROWS_ITEM_KERNELS(X)                                                                  \
    CT_LIST_EACH_FLOAT(X, cumsum) X(cumsum_i64) CT_LIST_EACH_HALF(X, cumsum)                     \
    CT_LIST_EACH_STORED_DTYPE(X, sort_indices) CT_LIST_EACH_STORED_DTYPE(X, topk_indices)        \
    X(multinomial_search_f64)

CT_ROWS_VECTOR_KERNELS(CT_CPU_LAUNCHER)
CT_ROWS_ITEM_KERNELS(CT_CPU_LAUNCHER_ITEMS)

void ct_cpu_register_rows(ct_cpu_kernel_launcher *table)
{
    CT_ROWS_KERNELS(CT_CPU_TABLE_SET)
}
