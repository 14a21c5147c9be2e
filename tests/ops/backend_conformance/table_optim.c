/* Conformance entries of the optimizers: two steps of SGD, Adam and AdamW over one parameter on
 * each device (the first step starts the state, the second uses it), from the same parameter
 * and gradients. Each returns the parameter after the steps followed by its state (momentum
 * buffer; exp_avg and exp_avg_sq), flattened. The parameter is a copy of input 0, permuted by
 * args.dims when given (a strided parameter, updated through a contiguous copy); the gradients
 * are inputs 1 and 2, in the parameter's shape, set as its .grad by backpropagating them from it.
 * Options in args.s: SGD lr, momentum, dampening, weight decay (flag: Nesterov); Adam lr, beta1,
 * beta2, eps, weight decay. Tolerances: a few multiply-adds that a device may fuse, and for
 * Adam a square root and a division: 8 ulps (PoCL: SGD 2, Adam 1).
 * float16 and bfloat16 parameters keep their state in their own dtype (as PyTorch's non-fused
 * steps do) and step in float: against float64, 4 units of the 16-bit format, as the state and
 * the parameter are rounded after the first step and the second adds to them (which may cancel).
 * float16 cannot hold Adam's exp_avg_sq of a gradient below about 0.005 (1e-3 g^2 underflows
 * to 0, and the step then divides by eps alone, as PyTorch's does): its 16-bit entries draw the
 * first gradient from [0.05, 8), not around 0. */
#include "conformance.h"

typedef ct_optimizer *(*make_optimizer)(ct_tensor *param, const conf_args *a);

static ct_optimizer *make_sgd(ct_tensor *param, const conf_args *a)
{
    ct_sgd_options o = {.lr = a->s[0], .momentum = a->s[1], .dampening = a->s[2],
                        .weight_decay = a->s[3], .nesterov = a->flag};
    return ct_optim_sgd_params(&param, 1, &o);
}

static ct_adam_options adam_options(const conf_args *a)
{
    return (ct_adam_options){.lr = a->s[0], .beta1 = a->s[1], .beta2 = a->s[2], .eps = a->s[3],
                             .weight_decay = a->s[4]};
}

static ct_optimizer *make_adam(ct_tensor *param, const conf_args *a)
{
    ct_adam_options o = adam_options(a);
    return ct_optim_adam_params(&param, 1, &o);
}

static ct_optimizer *make_adamw(ct_tensor *param, const conf_args *a)
{
    ct_adam_options o = adam_options(a);
    return ct_optim_adamw_params(&param, 1, &o);
}

/* Two steps, then the parameter and its state, flattened and joined. */
static ct_tensor *run_steps(ct_tensor *const *in, const conf_args *a, make_optimizer make,
                            const char *const *state, int state_count)
{
    ct_tensor *param = ct_clone(in[0]);
    if (param && a->ndims > 0) param = ct_permute(param, a->dims, a->ndims);
    ct_optimizer *optimizer = param ? make(param, a) : NULL;
    if (!optimizer) return NULL;
    bool ok = true;
    for (int step = 0; ok && step < 2; step++) {
        ok = ct_backward_with(param, in[1 + step], false) == CT_OK &&
             ct_optimizer_step(optimizer) == CT_OK;
        ct_optimizer_zero_grad(optimizer);
    }
    ct_tensor *parts[3] = {ok ? ct_flatten(param, 0, -1) : NULL};
    for (int k = 0; ok && k < state_count; k++) {
        ct_tensor *s = ct_optimizer_state(optimizer, 0, state[k]);
        parts[1 + k] = s ? ct_flatten(s, 0, -1) : NULL;
        ok = parts[1 + k] != NULL;
    }
    ct_optimizer_free(optimizer);
    return ok ? ct_cat((const ct_tensor *const *)parts, 1 + state_count, 0) : NULL;
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
    {0}};

static const conf_case adam_cases[] = {
    STEP_CASES(ADAM_DEFAULT),
    {.name = "weight decay, other betas and eps", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY}},
    {.name = "weight decay, strided parameter", .in = {{SHAPE(4, 5)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY, .dims = {1, 0}, .ndims = 2}},
    {0}};

#define ADAMW_DEFAULT .s = {1e-3, 0.9, 0.999, 1e-8, 0.01}

static const conf_case adamw_cases[] = {
    STEP_CASES(ADAMW_DEFAULT),
    {.name = "no weight decay", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DEFAULT}},
    {.name = "larger decay, other betas and eps", .in = {{SHAPE(5, 4)}, {SHAPE(5, 4)}, {SHAPE(5, 4)}},
     .args = {ADAM_DECAY}},
    {0}};

#define ENTRY(name, suffix, dtypes, first_grad, cases)                                           \
    {"ct_optim_" #name " step" suffix, 3, dtypes, {CONF_ANY, first_grad, CONF_ANY}, cases, 8,     \
     run_##name, false, NULL, 4}

const conf_op conf_optim_ops[] = {
    ENTRY(sgd, "", CONF_FLOAT | CONF_HALF, CONF_ANY, sgd_cases),
    ENTRY(adam, "", CONF_FLOAT, CONF_ANY, adam_cases),
    ENTRY(adamw, "", CONF_FLOAT, CONF_ANY, adamw_cases),
    ENTRY(adam, ", 16-bit", CONF_HALF, CONF_POSITIVE, adam_cases),
    ENTRY(adamw, ", 16-bit", CONF_HALF, CONF_POSITIVE, adamw_cases),
};
const int conf_optim_op_count = (int)(sizeof conf_optim_ops / sizeof conf_optim_ops[0]);
