/* The embedding kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/embedding.ct"

/* The sort is one item's loop; each backward item walks its row's positions; each forward item
 * copies a vector of one row: item by item. */
CT_EMBEDDING_KERNELS(CT_CPU_LAUNCHER_ITEMS)

void ct_cpu_register_embedding(ct_cpu_kernel_launcher *table)
{
    CT_EMBEDDING_KERNELS(CT_CPU_TABLE_SET)
}
