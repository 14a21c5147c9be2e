/* The nn kernels (nn.ct): im2col/col2im and the convolution's bias, max and average pooling
 * with their backward, cross-entropy from logits, the bias + ReLU after a Linear and its
 * backward. float32 and float64, float16 and bfloat16. */
#define CT_NN_KERNELS(X)                                                                         \
    CT_LIST_EACH_FLOAT(X, im2col) CT_LIST_EACH_FLOAT(X, col2im)                                  \
    CT_LIST_EACH_FLOAT(X, conv2d_bias_fill)                                                      \
    CT_LIST_EACH_FLOAT(X, max_pool2d) CT_LIST_EACH_FLOAT(X, max_pool2d_backward)                 \
    CT_LIST_EACH_FLOAT(X, avg_pool2d) CT_LIST_EACH_FLOAT(X, avg_pool2d_backward)                 \
    CT_LIST_EACH_FLOAT(X, cross_entropy_forward) CT_LIST_EACH_FLOAT(X, cross_entropy_backward)   \
    CT_LIST_EACH_FLOAT(X, linear_bias_relu) CT_LIST_EACH_FLOAT(X, linear_relu_backward)          \
    CT_LIST_EACH_HALF(X, im2col) CT_LIST_EACH_HALF(X, col2im)                                    \
    CT_LIST_EACH_HALF(X, conv2d_bias_fill)                                                       \
    CT_LIST_EACH_HALF(X, max_pool2d) CT_LIST_EACH_HALF(X, max_pool2d_backward)                   \
    CT_LIST_EACH_HALF(X, avg_pool2d) CT_LIST_EACH_HALF(X, avg_pool2d_backward)                   \
    CT_LIST_EACH_HALF(X, cross_entropy_forward) CT_LIST_EACH_HALF(X, cross_entropy_backward)     \
    CT_LIST_EACH_HALF(X, linear_bias_relu) CT_LIST_EACH_HALF(X, linear_relu_backward)
