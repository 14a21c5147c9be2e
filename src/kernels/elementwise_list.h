/* The elementwise kernels of elementwise.ct, in the same sets as they are defined there. */
#define CT_ELEMENTWISE_BINARY_KERNELS(X)                                                         \
    CT_LIST_EACH_STORED_DTYPE(X, add) CT_LIST_EACH_STORED_DTYPE(X, mul)                          \
    CT_LIST_EACH_STORED_DTYPE(X, maximum) CT_LIST_EACH_STORED_DTYPE(X, minimum)                  \
    CT_LIST_EACH_STORED_DTYPE(X, eq) CT_LIST_EACH_STORED_DTYPE(X, ne)                            \
    CT_LIST_EACH_STORED_DTYPE(X, lt) CT_LIST_EACH_STORED_DTYPE(X, le)                            \
    CT_LIST_EACH_STORED_DTYPE(X, gt) CT_LIST_EACH_STORED_DTYPE(X, ge)                            \
    CT_LIST_EACH_NUMERIC(X, sub) CT_LIST_EACH_HALF(X, sub) CT_LIST_EACH_NUMERIC(X, pow)          \
    CT_LIST_EACH_HALF(X, pow) CT_LIST_EACH_FLOAT(X, div) CT_LIST_EACH_HALF(X, div)
#define CT_ELEMENTWISE_SCALAR_OPS(X, SET)                                                        \
    SET(X, add_scalar) SET(X, sub_scalar) SET(X, mul_scalar) SET(X, div_scalar)                  \
    SET(X, pow_scalar) SET(X, eq_scalar) SET(X, ne_scalar) SET(X, lt_scalar) SET(X, le_scalar)   \
    SET(X, gt_scalar) SET(X, ge_scalar)
#define CT_LIST_EACH_INTEGER(X, base) X(base##_i32) X(base##_i64) X(base##_u8)
#define CT_ELEMENTWISE_SCALAR_KERNELS(X)                                                         \
    CT_ELEMENTWISE_SCALAR_OPS(X, CT_LIST_EACH_FLOAT) CT_ELEMENTWISE_SCALAR_OPS(X, CT_LIST_EACH_HALF) \
    CT_LIST_EACH_INTEGER(X, add_scalar) CT_LIST_EACH_INTEGER(X, sub_scalar)                      \
    CT_LIST_EACH_INTEGER(X, mul_scalar)
#define CT_ELEMENTWISE_UNARY_OPS(X, NUMERIC, FLOATING)                                           \
    NUMERIC(X, neg) NUMERIC(X, abs) NUMERIC(X, relu) NUMERIC(X, clamp) FLOATING(X, exp)          \
    FLOATING(X, log) FLOATING(X, sqrt) FLOATING(X, tanh) FLOATING(X, sigmoid) FLOATING(X, gelu)  \
    FLOATING(X, gelu_tanh) NUMERIC(X, sign) NUMERIC(X, floor) NUMERIC(X, round)                 \
    FLOATING(X, leaky_relu) FLOATING(X, silu) FLOATING(X, softplus) FLOATING(X, elu)             \
    FLOATING(X, log1p) FLOATING(X, sin) FLOATING(X, cos) FLOATING(X, rsqrt)                      \
    FLOATING(X, reciprocal) FLOATING(X, erf)
#define CT_ELEMENTWISE_UNARY_KERNELS(X)                                                          \
    CT_ELEMENTWISE_UNARY_OPS(X, CT_LIST_EACH_NUMERIC, CT_LIST_EACH_FLOAT)                        \
    CT_ELEMENTWISE_UNARY_OPS(X, CT_LIST_EACH_HALF, CT_LIST_EACH_HALF)
/* Derivatives the ops cannot compose (autograd). */
#define CT_ELEMENTWISE_BACKWARD_KERNELS(X)                                                       \
    CT_LIST_EACH_FLOAT(X, gelu_backward) CT_LIST_EACH_FLOAT(X, relu_backward)                    \
    CT_LIST_EACH_HALF(X, gelu_backward) CT_LIST_EACH_HALF(X, relu_backward)                      \
    CT_LIST_EACH_FLOAT(X, gelu_tanh_backward) CT_LIST_EACH_HALF(X, gelu_tanh_backward)
#define CT_ELEMENTWISE_KERNELS(X)                                                                \
    CT_ELEMENTWISE_BINARY_KERNELS(X) CT_ELEMENTWISE_SCALAR_KERNELS(X)                            \
    CT_ELEMENTWISE_UNARY_KERNELS(X) CT_LIST_EACH_STORED_DTYPE(X, where)                          \
    CT_ELEMENTWISE_BACKWARD_KERNELS(X)
