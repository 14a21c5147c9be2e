/* The nn kernels (convolution, pooling, cross-entropy), compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/nn.ct"

/* Pooling's items each walk their windows: run item by item (CT_CPU_LAUNCHER_ITEMS). The others
 * vectorise across items (im2col's rows) or within them (Linear + ReLU's lanes). Every kernel of
 * CT_NN_KERNELS must be in one of the two lists: the table below names each launcher. */
#define CT_NN_ITEM_KERNELS(X)                                                                    \
    CT_LIST_EACH_FLOAT(X, max_pool2d) CT_LIST_EACH_FLOAT(X, max_pool2d_backward)                 \
    CT_LIST_EACH_FLOAT(X, avg_pool2d) CT_LIST_EACH_FLOAT(X, avg_pool2d_backward)                 \
    CT_LIST_EACH_HALF(X, max_pool2d) CT_LIST_EACH_HALF(X, max_pool2d_backward)                   \
    CT_LIST_EACH_HALF(X, avg_pool2d) CT_LIST_EACH_HALF(X, avg_pool2d_backward)
#define CT_NN_VECTOR_KERNELS(X)                                                                  \
    CT_LIST_EACH_FLOAT(X, im2col) CT_LIST_EACH_FLOAT(X, col2im)                                  \
    CT_LIST_EACH_FLOAT(X, conv2d_bias_fill)                                                      \
    CT_LIST_EACH_FLOAT(X, cross_entropy_forward) CT_LIST_EACH_FLOAT(X, cross_entropy_backward)   \
    CT_LIST_EACH_FLOAT(X, linear_bias_relu) CT_LIST_EACH_FLOAT(X, linear_relu_backward)          \
    CT_LIST_EACH_HALF(X, im2col) CT_LIST_EACH_HALF(X, col2im)                                    \
    CT_LIST_EACH_HALF(X, conv2d_bias_fill)                                                       \
    CT_LIST_EACH_HALF(X, cross_entropy_forward) CT_LIST_EACH_HALF(X, cross_entropy_backward)     \
    CT_LIST_EACH_HALF(X, linear_bias_relu) CT_LIST_EACH_HALF(X, linear_relu_backward)

CT_NN_ITEM_KERNELS(CT_CPU_LAUNCHER_ITEMS)
CT_NN_VECTOR_KERNELS(CT_CPU_LAUNCHER)

void ct_cpu_register_nn(ct_cpu_kernel_launcher *table)
{
    CT_NN_KERNELS(CT_CPU_TABLE_SET)
}
