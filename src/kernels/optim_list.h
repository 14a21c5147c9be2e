/* The optimizer kernels (optim.ct): one step of SGD and of Adam/AdamW per parameter, in place,
 * over contiguous tensors; float32 and float64, then float16 and bfloat16. Flags in l[1] (see
 * optim.ct); l[0] = 1 marks the common case with no flag set, which the CPU launcher compiles as
 * a branch-free loop. */
#define CT_OPTIM_FLAG_WEIGHT_DECAY 1
#define CT_OPTIM_FLAG_NESTEROV 2
#define CT_OPTIM_FLAG_FIRST_STEP 4
#define CT_OPTIM_FLAG_DECOUPLED_DECAY 8 /* multi_adam_step: AdamW's decay */
#define CT_OPTIM_FLAG_UNSCALE 16        /* multi-tensor steps: grad *= l[3]'s double first */
#define CT_OPTIM_FLAG_CAPTURABLE 32     /* multi_adam_step: the scalars from a step record */
#define CT_OPTIM_FLAG_FACTOR_RECORD 64  /* multi_scale: the factor from a record (norm_fold's) */

#define CT_OPTIM_KERNELS(X)                                                                      \
    CT_OPTIM_PER_TENSOR_KERNELS(X) CT_OPTIM_MULTI_KERNELS(X) CT_OPTIM_MULTI_REDUCE_KERNELS(X)
#define CT_OPTIM_PER_TENSOR_KERNELS(X)                                                           \
    CT_LIST_EACH_FLOAT(X, sgd_step) CT_LIST_EACH_FLOAT(X, sgd_momentum_step)                     \
    CT_LIST_EACH_FLOAT(X, adam_moments) CT_LIST_EACH_FLOAT(X, adam_update)                       \
    CT_LIST_EACH_HALF(X, sgd_step) CT_LIST_EACH_HALF(X, sgd_momentum_step)                       \
    CT_LIST_EACH_HALF(X, adam_moments) CT_LIST_EACH_HALF(X, adam_update)                         \
    X(norm_fold_f64)
/* The multi-tensor kernels: CT_KERNEL_WIDE_BUFFERS buffers each (kernel_params.h, optim.ct). */
#define CT_OPTIM_MULTI_KERNELS(X)                                                                \
    CT_LIST_EACH_FLOAT(X, multi_sgd_step) CT_LIST_EACH_FLOAT(X, multi_sgd_momentum_step)         \
    CT_LIST_EACH_FLOAT(X, multi_adam_step) CT_LIST_EACH_FLOAT(X, multi_scale)                    \
    CT_LIST_EACH_HALF(X, multi_sgd_step) CT_LIST_EACH_HALF(X, multi_sgd_momentum_step)           \
    CT_LIST_EACH_HALF(X, multi_adam_step) X(multi_adam_advance_f64)
/* Multi-tensor reductions (CT_KERNEL_WIDE_BUFFERS buffers too), which the CPU runs in one piece:
 * partial sums of |g|^p over several gradients (clip_grad_norm_, the loss scaler's inf check). */
#define CT_OPTIM_MULTI_REDUCE_KERNELS(X) CT_LIST_EACH_FLOAT(X, multi_power_sum)
/* Elements per item of multi_power_sum: each item writes one partial. */
#define CT_MULTI_SUM_ITEM 256
/* What multi_power_sum sums (l[1]); see optim.ct. */
#define CT_MULTI_SUM_SQUARES 0
#define CT_MULTI_SUM_ABS 1
#define CT_MULTI_SUM_POW 2
#define CT_MULTI_MAX_ABS 3
#define CT_MULTI_SUM_TIMES_ZERO 4
