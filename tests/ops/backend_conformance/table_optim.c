/* Conformance entries of the optimizers: two steps of SGD, Adam, AdamW, RMSprop and Adagrad over one parameter on
 * each device (the first step starts the state, the second uses it), from the same parameter
 * and gradients. Each returns the parameter after the steps followed by its state (momentum
 * buffer; exp_avg and exp_avg_sq), flattened. The parameter is a copy of input 0, permuted by
 * args.dims when given (a strided parameter, updated through a contiguous copy); the gradients
 * are inputs 1 and 2, in the parameter's shape, set as its .grad by backpropagating them from it.
 * args.n = 2: two parameters (see run_steps); PER_PARAMETER: one, through the per-parameter
 * kernels (a fused step runs even one parameter through its multi-tensor kernel; see
 * conf_optimizer_set_per_parameter). Options in args.s: SGD lr, momentum, dampening,
 * weight decay (flag: Nesterov); Adam lr, beta1,
 * beta2, eps, weight decay (flag: capturable, its step count and scalars on the device). Tolerances: a few multiply-adds that a device may fuse, and for
 * Adam a square root and a division: 8 ulps (PoCL: SGD 2, Adam 1).
 * float16 and bfloat16 parameters keep their state in their own dtype (as PyTorch's non-fused
 * steps do) and step in float: against float64, 4 units of the 16-bit format, as the state and
 * the parameter are rounded after the first step and the second adds to them (which may cancel).
 * float16 cannot hold Adam's exp_avg_sq of a gradient below about 0.005 (1e-3 g^2 underflows
 * to 0, and the step then divides by eps alone, as PyTorch's does): its 16-bit entries draw the
 * first gradient from [0.05, 8), not around 0. */
#include <math.h>

#include "conformance.h"

#define PER_PARAMETER .n = -1

void (*conf_optimizer_set_per_parameter)(ct_optimizer *optimizer, bool per_parameter);

typedef ct_optimizer *(*make_optimizer)(ct_tensor *const *params, int count, const conf_args *a);

static ct_optimizer *make_sgd(ct_tensor *const *params, int count, const conf_args *a)
{
    ct_sgd_options o = {.lr = a->s[0], .momentum = a->s[1], .dampening = a->s[2],
                        .weight_decay = a->s[3], .nesterov = a->flag};
    return ct_optim_sgd_params(params, count, &o);
}

static ct_adam_options adam_options(const conf_args *a)
{
    return (ct_adam_options){.lr = a->s[0], .beta1 = a->s[1], .beta2 = a->s[2], .eps = a->s[3],
                             .weight_decay = a->s[4], .capturable = a->flag};
}

static ct_optimizer *make_adam(ct_tensor *const *params, int count, const conf_args *a)
{
    ct_adam_options o = adam_options(a);
    return ct_optim_adam_params(params, count, &o);
}

static ct_optimizer *make_adamw(ct_tensor *const *params, int count, const conf_args *a)
{
    ct_adam_options o = adam_options(a);
    return ct_optim_adamw_params(params, count, &o);
}

/* Two steps, then the parameter and its state, flattened and joined. With a->n == 2, two
 * parameters (input 0 and its negation, the same gradients), which the optimizer updates in one
 * launch of its multi-tensor kernels: both, with their state, one after the other. */
static ct_tensor *run_steps(ct_tensor *const *in, const conf_args *a, make_optimizer make,
                            const char *const *state, int state_count)
{
    int count = a->n == 2 ? 2 : 1;
    ct_tensor *params[2] = {ct_clone(in[0]), count == 2 ? ct_neg(in[0]) : NULL};
    for (int p = 0; p < count; p++)
        if (params[p] && a->ndims > 0) params[p] = ct_permute(params[p], a->dims, a->ndims);
    ct_optimizer *optimizer = params[0] && params[count - 1] ? make(params, count, a) : NULL;
    if (!optimizer) return NULL;
    if (conf_optimizer_set_per_parameter) conf_optimizer_set_per_parameter(optimizer, a->n == -1);
    bool ok = true;
    for (int step = 0; ok && step < 2; step++) {
        for (int p = 0; ok && p < count; p++) ok = ct_backward_with(params[p], in[1 + step], false) == CT_OK;
        ok = ok && ct_optimizer_step(optimizer) == CT_OK;
        ct_optimizer_zero_grad(optimizer);
    }
    ct_tensor *parts[32] = {NULL}; /* each parameter and its state tensors (RMSprop's centered momentum: 3) */
    int n = 0;
    ok = ok && count * (1 + state_count) <= (int)(sizeof parts / sizeof *parts);
    for (int p = 0; ok && p < count; p++) {
        parts[n] = ct_flatten(params[p], 0, -1);
        ok = parts[n++] != NULL;
        for (int k = 0; ok && k < state_count; k++) {
            ct_tensor *s = ct_optimizer_state(optimizer, p, state[k]);
            parts[n] = s ? ct_flatten(s, 0, -1) : NULL;
            ok = parts[n++] != NULL;
        }
    }
    ct_optimizer_free(optimizer);
    return ok ? ct_cat((const ct_tensor *const *)parts, n, 0) : NULL;
}

static ct_tensor *run_sgd(ct_tensor *const *in, const conf_args *a)
{
    static const char *const state[1] = {"momentum_buffer"};
    return run_steps(in, a, make_sgd, state, a->s[1] != 0.0 ? 1 : 0);
}

static ct_tensor *run_adam(ct_tensor *const *in, const conf_args *a)
{
    static const char *const state[2] = {"exp_avg", "exp_avg_sq"};
    return run_steps(in, a, make_adam, state, 2);
}

static ct_tensor *run_adamw(ct_tensor *const *in, const conf_args *a)
{
    static const char *const state[2] = {"exp_avg", "exp_avg_sq"};
    return run_steps(in, a, make_adamw, state, 2);
}

/* RMSprop: s = lr, alpha, eps, weight decay, momentum (flag: centered); Adagrad: s = lr, lr_decay,
 * weight decay, initial accumulator, eps. Their steps are chains of tensor ops. */
static ct_optimizer *make_rmsprop(ct_tensor *const *params, int count, const conf_args *a)
{
    ct_rmsprop_options o = {.lr = a->s[0], .alpha = a->s[1], .eps = a->s[2], .weight_decay = a->s[3],
                            .momentum = a->s[4], .centered = a->flag};
    return ct_optim_rmsprop_params(params, count, &o);
}

static ct_optimizer *make_adagrad(ct_tensor *const *params, int count, const conf_args *a)
{
    ct_adagrad_options o = {.lr = a->s[0], .lr_decay = a->s[1], .weight_decay = a->s[2],
                            .initial_accumulator_value = a->s[3], .eps = a->s[4]};
    return ct_optim_adagrad_params(params, count, &o);
}

static ct_tensor *run_rmsprop(ct_tensor *const *in, const conf_args *a)
{
    const char *state[3] = {"square_avg"};
    int n = 1;
    if (a->s[4] != 0.0) state[n++] = "momentum_buffer";
    if (a->flag) state[n++] = "grad_avg";
    return run_steps(in, a, make_rmsprop, state, n);
}

static ct_tensor *run_adagrad(ct_tensor *const *in, const conf_args *a)
{
    static const char *const state[1] = {"sum"};
    return run_steps(in, a, make_adagrad, state, 1);
}

/* The shapes every optimizer is run over, with its options given by OPTIONS. */
#define STEP_CASES(OPTIONS)                                                                      \
    {.name = "[5, 4]", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}}, .args = {OPTIONS}},  \
    {.name = "strided parameter", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},           \
     .args = {OPTIONS, .dims = {1, 0}, .ndims = 2}},                                             \
    {.name = "strided gradients",                                                                \
     .in = {{SHAPE(3, 4, 5)}, {SHAPE(3, 5, 4), .views = {TRANSPOSED(1, 2)}},                     \
            {SHAPE(1, 4, 5), .views = {EXPANDED(3, 4, 5)}}},                                     \
     .args = {OPTIONS}},                                                                         \
    {.name = "0-d", .in = {{.ndim = 0}, {.ndim = 0}, {.ndim = 0}}, .args = {OPTIONS}},           \
    {.name = "empty", .in = {{SHAPE(0, 3)}, {SHAPE(0, 3)}, {SHAPE(0, 3)}}, .args = {OPTIONS}},   \
    {.name = "sprinkled edge values in the gradient",                                            \
     .in = {{SHAPE(8, 8)}, {SHAPE(8, 8), .values = CONF_SPRINKLED}, {SHAPE(8, 8)}},              \
     .args = {OPTIONS}},                                                                         \
    {.name = "large", .in = {{SHAPE(300, 250)}, {SHAPE(300, 250)}, {SHAPE(300, 250)}},           \
     .args = {OPTIONS}}

#define SGD_PLAIN .s = {0.1}
#define SGD_MOMENTUM .s = {0.1, 0.9}
#define SGD_EVERYTHING .s = {0.05, 0.9, 0.25, 0.01}
#define SGD_NESTEROV .s = {0.1, 0.9, 0.0, 0.01}, .flag = true
#define ADAM_DEFAULT .s = {1e-3, 0.9, 0.999, 1e-8}
#define ADAM_DECAY .s = {0.1, 0.5, 0.9, 1e-3, 0.1}

static const conf_case sgd_cases[] = {
    STEP_CASES(SGD_MOMENTUM),
    {.name = "plain", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}}, .args = {SGD_PLAIN}},
    {.name = "weight decay", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {.s = {0.1, 0.0, 0.0, 0.01}}},
    {.name = "momentum, dampening, weight decay", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_EVERYTHING}},
    {.name = "Nesterov, weight decay", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_NESTEROV}},
    {.name = "Nesterov, strided parameter", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_NESTEROV, .dims = {1, 0}, .ndims = 2}},
    {.name = "plain, large", .in = {{SHAPE(300, 250)}, {SHAPE(300, 250)}, {SHAPE(300, 250)}},
     .args = {SGD_PLAIN}},
    {.name = "per parameter, plain", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_PLAIN, PER_PARAMETER}},
    {.name = "per parameter, Nesterov, strided", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_NESTEROV, .dims = {1, 0}, .ndims = 2, PER_PARAMETER}},
    {.name = "per parameter, everything", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_EVERYTHING, PER_PARAMETER}},
    {.name = "two parameters, plain", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_PLAIN, .n = 2}},
    {.name = "two parameters, Nesterov, strided", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {SGD_NESTEROV, .dims = {1, 0}, .ndims = 2, .n = 2}},
    {.name = "two parameters, everything, large",
     .in = {{SHAPE(300, 250)}, {SHAPE(300, 250)}, {SHAPE(300, 250)}}, .args = {SGD_EVERYTHING, .n = 2}},
    {0}};

static const conf_case adam_cases[] = {
    STEP_CASES(ADAM_DEFAULT),
    {.name = "weight decay, other betas and eps", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY}},
    {.name = "weight decay, strided parameter", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY, .dims = {1, 0}, .ndims = 2}},
    {.name = "two parameters", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DEFAULT, .n = 2}},
    {.name = "per parameter", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DEFAULT, PER_PARAMETER}},
    {.name = "per parameter, weight decay, strided", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY, .dims = {1, 0}, .ndims = 2, PER_PARAMETER}},
    {.name = "two parameters, weight decay, large",
     .in = {{SHAPE(300, 250)}, {SHAPE(300, 250)}, {SHAPE(300, 250)}}, .args = {ADAM_DECAY, .n = 2}},
    {.name = "capturable", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DEFAULT, .flag = true}},
    {.name = "capturable, two parameters, weight decay, strided",
     .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY, .dims = {1, 0}, .ndims = 2, .n = 2, .flag = true}},
    {.name = "capturable, per parameter", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DEFAULT, PER_PARAMETER, .flag = true}},
    {.name = "capturable, large", .in = {{SHAPE(300, 250)}, {SHAPE(300, 250)}, {SHAPE(300, 250)}},
     .args = {ADAM_DECAY, .flag = true}},
    {0}};

#define ADAMW_DEFAULT .s = {1e-3, 0.9, 0.999, 1e-8, 0.01}

static const conf_case adamw_cases[] = {
    STEP_CASES(ADAMW_DEFAULT),
    {.name = "no weight decay", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DEFAULT}},
    {.name = "larger decay, other betas and eps", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY}},
    {.name = "two parameters", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAMW_DEFAULT, .n = 2}},
    {.name = "per parameter, larger decay", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY, PER_PARAMETER}},
    {.name = "capturable, two parameters", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAMW_DEFAULT, .n = 2, .flag = true}},
    {0}};

#define RMSPROP_DEFAULT .s = {1e-2, 0.99, 1e-8}
#define RMSPROP_EVERYTHING .s = {1e-2, 0.9, 1e-6, 0.1, 0.5}, .flag = true
static const conf_case rmsprop_cases[] = {
    STEP_CASES(RMSPROP_DEFAULT),
    {.name = "centered, momentum, weight decay", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {RMSPROP_EVERYTHING}},
    {.name = "momentum, strided parameter", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {.s = {1e-2, 0.99, 1e-8, 0.0, 0.9}, .dims = {1, 0}, .ndims = 2}},
    {.name = "two parameters, everything", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {RMSPROP_EVERYTHING, .n = 2}},
    {0}};

#define ADAGRAD_DEFAULT .s = {1e-2, 0.0, 0.0, 0.0, 1e-10}
static const conf_case adagrad_cases[] = {
    STEP_CASES(ADAGRAD_DEFAULT),
    {.name = "lr decay, weight decay, initial accumulator", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {.s = {0.1, 0.5, 0.01, 0.1, 1e-10}}},
    {.name = "two parameters, strided", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {.s = {0.1, 0.5, 0.01, 0.1, 1e-10}, .dims = {1, 0}, .ndims = 2, .n = 2}},
    {0}};

/* ct_clip_grad_norm_ over three gradients (inputs 0-2, set as the .grad of zero parameters of
 * their shapes): the clipped gradients, flattened and joined, then the total norm. s: norm_type,
 * max_norm. Past 256 elements a gradient's sum is taken in several partials; views give strided
 * gradients (scaled through a contiguous copy). */
static ct_tensor *run_clip(ct_tensor *const *in, const conf_args *a)
{
    ct_tensor *params[3] = {NULL};
    bool ok = true;
    for (int k = 0; ok && k < 3; k++) {
        /* the gradient becomes the .grad itself, which clipping scales: a copy of the input,
         * strided as it is (the transposed case) */
        ct_tensor *copy = NULL;
        if (ct_is_contiguous(in[k])) {
            copy = ct_clone(in[k]);
        } else {
            ct_tensor *back = ct_transpose(in[k], 0, 1), *dense = back ? ct_clone(back) : NULL;
            copy = dense ? ct_transpose(dense, 0, 1) : NULL;
            ct_release(back), ct_release(dense);
        }
        params[k] = ct_zeros(ct_tensor_shape(in[k]), ct_tensor_ndim(in[k]), ct_tensor_dtype(in[k]), a->device);
        ok = copy && params[k] && ct_requires_grad_(params[k], true) == CT_OK &&
             ct_backward_with(params[k], copy, false) == CT_OK;
        ct_release(copy);
    }
    double total = 0.0;
    ok = ok && ct_clip_grad_norm_(params, 3, a->s[1], a->s[0], &total) == CT_OK;
    ct_tensor *parts[4] = {NULL};
    for (int k = 0; ok && k < 3; k++) {
        ct_tensor *g = ct_grad(params[k]);
        parts[k] = g ? ct_flatten(g, 0, -1) : NULL;
        ok = parts[k] != NULL;
        ct_release(g);
    }
    int64_t one = 1;
    parts[3] = ok ? ct_full(&one, 1, total, ct_tensor_dtype(in[0]), a->device) : NULL;
    ct_tensor *out = ok && parts[3] ? ct_cat((const ct_tensor *const *)parts, 4, 0) : NULL;
    for (int k = 0; k < 4; k++) ct_release(parts[k]);
    for (int k = 0; k < 3; k++) ct_release(params[k]);
    return out;
}

#define CLIP_GRADS {SHAPE(5, 4)}, {SHAPE(700)}, {SHAPE(3, 300), .views = {TRANSPOSED(0, 1)}}
static const conf_case clip_cases[] = {
    {.name = "2-norm", .in = {CLIP_GRADS}, .args = {.s = {2.0, 1.5}}},
    {.name = "1-norm", .in = {CLIP_GRADS}, .args = {.s = {1.0, 2.0}}},
    {.name = "3-norm", .in = {CLIP_GRADS}, .args = {.s = {3.0, 0.5}}},
    {.name = "infinity norm", .in = {CLIP_GRADS}, .args = {.s = {INFINITY, 0.25}}},
    {.name = "below max_norm: unchanged", .in = {CLIP_GRADS}, .args = {.s = {2.0, 1e9}}},
    {.name = "sprinkled edge values",
     .in = {{SHAPE(8, 8), .values = CONF_SPRINKLED}, {SHAPE(300)}, {SHAPE(3)}}, .args = {.s = {2.0, 1.0}}},
    {0}};

#define ENTRY(name, suffix, dtypes, first_grad, cases)                                           \
    {"ct_optim_" #name " step" suffix, 3, dtypes, {CONF_ANY, first_grad, CONF_ANY}, cases, 8,     \
     run_##name, false, NULL, 4}
/* Adam's 16-bit state: where a second gradient nearly cancels the first, exp_avg (rounded after
 * the first step) carries a 16-bit rounding of a larger value into a small one; over 450000
 * elements a few reach 8 units of the result: 16 against float64. */
#define ENTRY_16_BIT_ADAM(name, cases)                                                           \
    {"ct_optim_" #name " step, 16-bit", 3, CONF_HALF, {CONF_ANY, CONF_POSITIVE, CONF_ANY}, cases, \
     8, run_##name, false, NULL, 16}

const conf_op conf_optim_ops[] = {
    ENTRY(sgd, "", CONF_FLOAT | CONF_HALF, CONF_ANY, sgd_cases),
    ENTRY(adam, "", CONF_FLOAT, CONF_ANY, adam_cases),
    ENTRY(adamw, "", CONF_FLOAT, CONF_ANY, adamw_cases),
    ENTRY_16_BIT_ADAM(adam, adam_cases),
    ENTRY_16_BIT_ADAM(adamw, adamw_cases),
    /* chains of ops (a rounding each, a square root and a division; centered: a difference of
     * squares that may cancel): 64 ulps */
    {"ct_optim_rmsprop step", 3, CONF_FLOAT, {CONF_ANY, CONF_ANY, CONF_ANY}, rmsprop_cases, 64, run_rmsprop, false,
     NULL, 0},
    {"ct_optim_adagrad step", 3, CONF_FLOAT, {CONF_ANY, CONF_ANY, CONF_ANY}, adagrad_cases, 64, run_adagrad, false,
     NULL, 0},
    /* partial sums in another order than the CPU's (a device's pow): 64 ulps of the total */
    {"ct_clip_grad_norm_", 3, CONF_FLOAT, {CONF_ANY, CONF_ANY, CONF_ANY}, clip_cases, 64, run_clip, false, NULL, 0}};
const int conf_optim_op_count = (int)(sizeof conf_optim_ops / sizeof conf_optim_ops[0]);
