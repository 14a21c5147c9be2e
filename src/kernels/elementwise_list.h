/* The elementwise kernels of elementwise.ct, in the same sets as they are defined there. */
#define CT_ELEMENTWISE_BINARY_KERNELS(X)                                                         \
    CT_LIST_EACH_DTYPE(X, add) CT_LIST_EACH_DTYPE(X, mul) CT_LIST_EACH_DTYPE(X, maximum)         \
    CT_LIST_EACH_DTYPE(X, minimum) CT_LIST_EACH_DTYPE(X, eq) CT_LIST_EACH_DTYPE(X, ne)           \
    CT_LIST_EACH_DTYPE(X, lt) CT_LIST_EACH_DTYPE(X, le) CT_LIST_EACH_DTYPE(X, gt)                \
    CT_LIST_EACH_DTYPE(X, ge) CT_LIST_EACH_NUMERIC(X, sub) CT_LIST_EACH_NUMERIC(X, pow)          \
    CT_LIST_EACH_FLOAT(X, div)
#define CT_ELEMENTWISE_SCALAR_KERNELS(X)                                                         \
    CT_LIST_EACH_FLOAT(X, add_scalar) CT_LIST_EACH_FLOAT(X, sub_scalar)                          \
    CT_LIST_EACH_FLOAT(X, mul_scalar) CT_LIST_EACH_FLOAT(X, div_scalar)                          \
    CT_LIST_EACH_FLOAT(X, pow_scalar) CT_LIST_EACH_FLOAT(X, eq_scalar)                           \
    CT_LIST_EACH_FLOAT(X, ne_scalar) CT_LIST_EACH_FLOAT(X, lt_scalar)                            \
    CT_LIST_EACH_FLOAT(X, le_scalar) CT_LIST_EACH_FLOAT(X, gt_scalar)                            \
    CT_LIST_EACH_FLOAT(X, ge_scalar)
#define CT_ELEMENTWISE_UNARY_KERNELS(X)                                                          \
    CT_LIST_EACH_NUMERIC(X, neg) CT_LIST_EACH_NUMERIC(X, abs) CT_LIST_EACH_NUMERIC(X, relu)      \
    CT_LIST_EACH_NUMERIC(X, clamp) CT_LIST_EACH_FLOAT(X, exp) CT_LIST_EACH_FLOAT(X, log)         \
    CT_LIST_EACH_FLOAT(X, sqrt) CT_LIST_EACH_FLOAT(X, tanh) CT_LIST_EACH_FLOAT(X, sigmoid)       \
    CT_LIST_EACH_FLOAT(X, gelu)
/* Derivatives the ops cannot compose (autograd). */
#define CT_ELEMENTWISE_BACKWARD_KERNELS(X)                                                       \
    CT_LIST_EACH_FLOAT(X, gelu_backward) CT_LIST_EACH_FLOAT(X, relu_backward)
#define CT_ELEMENTWISE_KERNELS(X)                                                                \
    CT_ELEMENTWISE_BINARY_KERNELS(X) CT_ELEMENTWISE_SCALAR_KERNELS(X)                            \
    CT_ELEMENTWISE_UNARY_KERNELS(X) CT_LIST_EACH_DTYPE(X, where)                                 \
    CT_ELEMENTWISE_BACKWARD_KERNELS(X)
