#define CT_COPY_KERNELS_FROM(X, S) X(copy_##S##_to_f32) X(copy_##S##_to_f64) X(copy_##S##_to_i32) \
    X(copy_##S##_to_i64) X(copy_##S##_to_u8) X(copy_##S##_to_b8)
#define CT_COPY_KERNELS(X) CT_COPY_KERNELS_FROM(X, f32) CT_COPY_KERNELS_FROM(X, f64) \
    CT_COPY_KERNELS_FROM(X, i32) CT_COPY_KERNELS_FROM(X, i64) CT_COPY_KERNELS_FROM(X, u8) \
    CT_COPY_KERNELS_FROM(X, b8)
