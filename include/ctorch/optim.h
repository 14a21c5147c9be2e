/* ctorch optim: SGD, Adam and AdamW (torch.optim), with parameter groups.
 *
 * An optimizer holds a reference to each parameter and, per parameter, its state (SGD's
 * momentum buffer; Adam's exp_avg, exp_avg_sq and step count) as tensors on the parameter's
 * device. ct_optimizer_step reads each parameter's .grad (parameters without one are skipped)
 * and writes the new values into the parameter tensors in place, with grad mode off: the
 * parameter objects stay the same, so a module and its optimizer keep sharing them.
 *
 * Devices: ct_module_to moves parameters in place (same tensor objects), so the optimizer sees
 * them on the new device; at its next step (or state access) it moves any state tensor that is
 * not on its parameter's device (or not of its dtype, after ct_module_to_dtype) there. Moving a
 * module after making its optimizer, back and forth, is therefore fine.
 *
 * The arithmetic is PyTorch's (torch.optim's single-tensor implementations), in the parameter's
 * dtype. */
#ifndef CTORCH_OPTIM_H
#define CTORCH_OPTIM_H

#include "ctorch/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_optimizer ct_optimizer;

/* torch.optim.SGD: g = grad + weight_decay * p; with momentum, buf = g on the first step and
 * momentum * buf + (1 - dampening) * g after, and g = buf (or g + momentum * buf when nesterov);
 * p -= lr * g. */
typedef struct ct_sgd_options {
    double lr;
    double momentum;     /* 0: no momentum buffer */
    double dampening;
    double weight_decay; /* L2 penalty */
    bool nesterov;       /* needs momentum > 0 and dampening 0 */
} ct_sgd_options;
/* lr, no momentum, no dampening, no weight decay. */
ct_sgd_options ct_sgd_options_default(double lr);

/* torch.optim.Adam / AdamW: m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2,
 * p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps). Adam adds weight_decay * p
 * to g (L2); AdamW multiplies p by 1 - lr * weight_decay first (decoupled decay). */
typedef struct ct_adam_options {
    double lr;
    double beta1, beta2;
    double eps;
    double weight_decay;
    /* PyTorch's capturable=True: each parameter's step count lives on its device and the step's
     * kernels compute the bias correction there, so that a graph may capture ct_optimizer_step
     * (graph.h) and every replay advances the count. The same bits as a step that is not
     * capturable; one more launch per 8 parameters of a device, and up to 6 parameters (not 8) a
     * launch. lr and the betas are read when the step is captured: a replay keeps them. */
    bool capturable;
} ct_adam_options;
/* lr, betas (0.9, 0.999), eps 1e-8, weight decay 0, not capturable (Adam's default). */
ct_adam_options ct_adam_options_default(double lr);
/* The same with weight decay 0.01 (AdamW's default). */
ct_adam_options ct_adamw_options_default(double lr);

/* torch.optim.RMSprop: g = grad + weight_decay * p; v = alpha v + (1 - alpha) g^2; centered: a =
 * alpha-blend of g, and v - a^2 under the root; d = sqrt(...) + eps; with momentum buf = momentum
 * buf + g / d, p -= lr buf, else p -= lr g / d. State: square_avg, momentum_buffer (momentum > 0),
 * grad_avg (centered). */
typedef struct ct_rmsprop_options {
    double lr, alpha, eps, weight_decay, momentum;
    bool centered;
} ct_rmsprop_options;
/* lr, alpha 0.99, eps 1e-8, no weight decay, no momentum, not centered (PyTorch's; lr 1e-2). */
ct_rmsprop_options ct_rmsprop_options_default(double lr);

/* torch.optim.Adagrad: g = grad + weight_decay * p; sum += g^2;
 * p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps). State: sum (from
 * initial_accumulator_value). */
typedef struct ct_adagrad_options {
    double lr, lr_decay, weight_decay, initial_accumulator_value, eps;
} ct_adagrad_options;
/* lr, no lr decay, no weight decay, accumulator 0, eps 1e-10 (PyTorch's; lr 1e-2). */
ct_adagrad_options ct_adagrad_options_default(double lr);

/* Every constructor takes options NULL for the defaults: ct_sgd_options_default(1e-3),
 * ct_adam_options_default(1e-3), ct_adamw_options_default(1e-3), ct_rmsprop_options_default(1e-2),
 * ct_adagrad_options_default(1e-2) (PyTorch's). RMSprop and Adagrad step a parameter at a time
 * (a few launches each; ct_optimizer_set_fused changes nothing for them).
 * Optimizers over every parameter of a module (ct_module_named_parameters' order)... */
ct_optimizer *ct_optim_sgd(const ct_module *module, const ct_sgd_options *options);
ct_optimizer *ct_optim_adam(const ct_module *module, const ct_adam_options *options);
ct_optimizer *ct_optim_adamw(const ct_module *module, const ct_adam_options *options);
/* ...or over a list of floating leaf tensors (each made to require grad). */
ct_optimizer *ct_optim_sgd_params(ct_tensor *const *params, int64_t count, const ct_sgd_options *options);
ct_optimizer *ct_optim_adam_params(ct_tensor *const *params, int64_t count, const ct_adam_options *options);
ct_optimizer *ct_optim_adamw_params(ct_tensor *const *params, int64_t count, const ct_adam_options *options);
ct_optimizer *ct_optim_rmsprop(const ct_module *module, const ct_rmsprop_options *options);
ct_optimizer *ct_optim_adagrad(const ct_module *module, const ct_adagrad_options *options);
ct_optimizer *ct_optim_rmsprop_params(ct_tensor *const *params, int64_t count, const ct_rmsprop_options *options);
ct_optimizer *ct_optim_adagrad_params(ct_tensor *const *params, int64_t count, const ct_adagrad_options *options);

/* ...or over parameter groups (PyTorch's param_groups): each group's parameters with their own
 * hyperparameters. A NaN field takes the value of the optimizer's options; the fields of another
 * kind (momentum for Adam, the betas for SGD) are not read. The parameters are numbered group
 * after group (ct_optimizer_param, the state dict), each in one group only; a step updates the
 * parameters of each group, device and dtype together. Errors: group_count < 1, a parameter in
 * two groups, a group's hyperparameter out of range (named with its group). */
typedef struct ct_param_group {
    ct_tensor *const *params;
    int64_t count;
    double lr, weight_decay;
    double beta1, beta2; /* the Adam family */
    double momentum;     /* SGD */
} ct_param_group;
/* params/count with every hyperparameter NaN (the optimizer's). */
ct_param_group ct_param_group_of(ct_tensor *const *params, int64_t count);
ct_optimizer *ct_optim_sgd_groups(const ct_param_group *groups, int64_t group_count, const ct_sgd_options *options);
ct_optimizer *ct_optim_adam_groups(const ct_param_group *groups, int64_t group_count, const ct_adam_options *options);
ct_optimizer *ct_optim_adamw_groups(const ct_param_group *groups, int64_t group_count,
                                    const ct_adam_options *options);
/* RMSprop reads a group's lr, weight_decay and momentum; Adagrad its lr and weight_decay. */
ct_optimizer *ct_optim_rmsprop_groups(const ct_param_group *groups, int64_t group_count,
                                      const ct_rmsprop_options *options);
ct_optimizer *ct_optim_adagrad_groups(const ct_param_group *groups, int64_t group_count,
                                      const ct_adagrad_options *options);
/* 1 for the optimizers made without groups; 0 for NULL. */
int64_t ct_optimizer_group_count(const ct_optimizer *optimizer);
/* A group's learning rate (NaN with CT_ERR_INDEX for a group out of range), and changing it. */
double ct_optimizer_group_lr(const ct_optimizer *optimizer, int64_t group);
ct_status ct_optimizer_set_group_lr(ct_optimizer *optimizer, int64_t group, double lr);

/* Releases the parameters and the state; while a scheduler made on the optimizer lives, it keeps
 * the optimizer (freed with the last of them). NULL-safe. */
void ct_optimizer_free(ct_optimizer *optimizer);

/* One update of every parameter that has a gradient, fused as PyTorch's foreach optimizers: the
 * parameters of one device and dtype (and, for Adam, step count) are updated 8 to a launch, so a
 * step costs ceil(parameters / 8) launches per device (ct_device_kernel_launches), where one per
 * parameter (SGD) or two (Adam) would be; the same bits as a step per parameter. */
ct_status ct_optimizer_step(ct_optimizer *optimizer);
/* true (the default): the fused step above; false: the parameters one by one, a launch (SGD) or
 * two (Adam) each, as PyTorch's foreach=False; the same bits either way (`ctorch bench` sets the
 * two side by side). Errors: optimizer NULL. */
ct_status ct_optimizer_set_fused(ct_optimizer *optimizer, bool fused);
/* Drops every parameter's gradient (PyTorch's default, set_to_none=True): no kernel launch on any
 * device, and the next backward writes fresh gradients instead of adding to zeros. */
void ct_optimizer_zero_grad(ct_optimizer *optimizer);

/* ---- loss scaling (the hook of a gradient scaler, torch.amp.GradScaler's step) ----
 * A step from gradients that hold loss * scale's gradients: each gradient is multiplied by
 * inv_scale (1 / scale, in the gradient's dtype) inside the fused step's own launches, and the
 * unscaled gradients stay in .grad (as after GradScaler.unscale_). When some unscaled gradient
 * holds an inf or a NaN, nothing changes (no parameter, state, gradient or step count) and
 * *found_inf is true: the scaler skips the step and lowers its scale. The check costs a launch
 * per 8 gradients of a device and dtype and one read back there (the host's only wait, as
 * GradScaler.step reads found_inf); the step then costs what ct_optimizer_step does. With
 * inv_scale 1 and finite gradients, the same bits as ct_optimizer_step. Errors: NULL arguments;
 * inv_scale not a finite number > 0. */
ct_status ct_optimizer_step_unscaled(ct_optimizer *optimizer, double inv_scale, bool *found_inf);

/* "SGD", "Adam", "AdamW", "RMSprop", "Adagrad". */
const char *ct_optimizer_kind(const ct_optimizer *optimizer);
int64_t ct_optimizer_param_count(const ct_optimizer *optimizer);
/* A new reference to parameter index (in the optimizer's order). */
ct_tensor *ct_optimizer_param(const ct_optimizer *optimizer, int64_t index);
/* The learning rate (group 0's), and changing it between steps (every group's; a finite number
 * >= 0). */
double ct_optimizer_lr(const ct_optimizer *optimizer);
ct_status ct_optimizer_set_lr(ct_optimizer *optimizer, double lr);
/* Steps taken (Adam's t, counted per parameter in PyTorch; this is the largest of them). */
int64_t ct_optimizer_steps(const ct_optimizer *optimizer);
/* A new reference to a state tensor of parameter index ("momentum_buffer", "exp_avg",
 * "exp_avg_sq", "square_avg", "grad_avg", "sum"), or NULL with CT_ERR_INDEX when there is none yet. */
ct_tensor *ct_optimizer_state(const ct_optimizer *optimizer, int64_t index, const char *name);

/* ---- checkpoints ----
 * The optimizer's state as a state dict (save it with ct_save): PyTorch's structure as names,
 *     param_groups.<g>.lr, param_groups.<g>.momentum, ...   (float64 scalars: group g's hyperparameters)
 *     param_groups.<g>.params                             (int64: group g's parameters, numbered in order)
 *     state.<i>.step, state.<i>.exp_avg, ...             (per parameter that has taken a step)
 * with the metadata "optimizer" = "SGD" | "Adam" | "AdamW". The state tensors are detached views
 * on their parameters' devices. */
ct_state_dict *ct_optimizer_state_dict(const ct_optimizer *optimizer);
/* Restores hyperparameters, steps and state (copied onto each parameter's device and dtype) into
 * an optimizer of the same kind over groups of the same sizes and parameters of the same shapes.
 * Everything is checked first, and on an error nothing changes: every group's hyperparameters as
 * the constructors check them, each step a whole number from 0 to 2^53, Adam's step, exp_avg and
 * exp_avg_sq all there or none, state tensors floating and of their parameter's shape. */
ct_status ct_optimizer_load_state_dict(ct_optimizer *optimizer, const ct_state_dict *sd);


/* ---- learning-rate schedules (torch.optim.lr_scheduler) ----
 * A scheduler sets its optimizer's learning rate (ct_optimizer_set_lr) from a count of steps,
 * last_epoch: the constructor applies the value at 0 (as PyTorch's constructors do), and each
 * ct_lr_scheduler_step advances the count by one and applies the next value. Every value is
 * PyTorch's closed form of the schedule (its _get_closed_form_lr where it has one), computed from
 * the base learning rate (the optimizer's at construction) and the count alone, so that a schedule
 * restored with ct_lr_scheduler_set_last_epoch continues with the very same values. With
 * parameter groups, each group's value comes from its own initial learning rate (PyTorch's
 * base_lrs, the group's lr when the scheduler is made). A scheduler holds a reference to its
 * optimizer: ct_optimizer_free before ct_lr_scheduler_free is safe. */
typedef struct ct_lr_scheduler ct_lr_scheduler;

/* StepLR: base_lr * gamma^floor(t / step_size). step_size >= 1, gamma > 0. */
ct_status ct_lr_scheduler_step_lr(ct_optimizer *optimizer, int64_t step_size, double gamma, ct_lr_scheduler **out);
/* CosineAnnealingLR: eta_min + (base_lr - eta_min) (1 + cos(pi t / t_max)) / 2. t_max >= 1,
 * eta_min >= 0. Past t_max the cosine goes on (as PyTorch's closed form does). */
ct_status ct_lr_scheduler_cosine_annealing(ct_optimizer *optimizer, int64_t t_max, double eta_min,
                                           ct_lr_scheduler **out);
/* LinearLR (a linear warm-up): base_lr * (start + (end - start) min(t, total_iters) / total_iters).
 * 0 < start_factor <= 1, 0 <= end_factor <= 1, total_iters >= 1. */
ct_status ct_lr_scheduler_linear(ct_optimizer *optimizer, double start_factor, double end_factor,
                                 int64_t total_iters, ct_lr_scheduler **out);
/* OneCycleLR (two phases): from max_lr / div_factor up to max_lr over the first
 * pct_start * total_steps - 1 steps, then down to max_lr / div_factor / final_div_factor at step
 * total_steps - 1, by cosine (or linear) annealing. Stepping more than total_steps times is an
 * error (total_steps + 1 values in all, the first at construction). Unlike PyTorch's default, momentum is not cycled (cycle_momentum=False). */
typedef struct ct_one_cycle_options {
    double pct_start;        /* 0.3 */
    double div_factor;       /* 25 */
    double final_div_factor; /* 1e4 */
    bool linear_anneal;      /* false: 'cos' */
} ct_one_cycle_options;
ct_one_cycle_options ct_one_cycle_options_default(void);
/* options may be NULL: the defaults. */
ct_status ct_lr_scheduler_one_cycle(ct_optimizer *optimizer, double max_lr, int64_t total_steps,
                                    const ct_one_cycle_options *options, ct_lr_scheduler **out);

/* Linear warm-up from lr/warmup_steps to lr over warmup_steps, then cosine decay to
 * min_lr_factor * lr at total_steps (llm.c's train_gpt2.cu: lr * (t + 1) / warmup_steps while
 * t < warmup_steps; then min_lr + 0.5 (1 + cos(pi * decay_ratio)) (lr - min_lr), decay_ratio =
 * (t - warmup_steps) / (total_steps - warmup_steps)), and min_lr from total_steps on. Per group,
 * from each group's initial lr. 0 <= warmup_steps < total_steps, 0 <= min_lr_factor <= 1. */
ct_status ct_lr_scheduler_warmup_cosine(ct_optimizer *optimizer, int64_t warmup_steps, int64_t total_steps,
                                        double min_lr_factor, ct_lr_scheduler **out);

/* ExponentialLR: base_lr * gamma^t. gamma > 0. */
ct_status ct_lr_scheduler_exponential(ct_optimizer *optimizer, double gamma, ct_lr_scheduler **out);
/* MultiStepLR: base_lr * gamma^(the number of milestones <= t). milestones increasing, >= 1
 * (copied); gamma > 0. */
ct_status ct_lr_scheduler_multi_step(ct_optimizer *optimizer, const int64_t *milestones, int64_t count,
                                     double gamma, ct_lr_scheduler **out);
/* LambdaLR: base_lr * lambda(t, group, context), for each parameter group. */
typedef double (*ct_lr_lambda_fn)(int64_t epoch, int64_t group, void *context);
ct_status ct_lr_scheduler_lambda(ct_optimizer *optimizer, ct_lr_lambda_fn lambda, void *context,
                                 ct_lr_scheduler **out);
/* SequentialLR: schedulers[i] from milestones[i - 1] on (count - 1 increasing milestones >= 1), each
 * counting from 0 at its milestone. ChainedScheduler: the product of the schedules' factors
 * (StepLR, MultiStepLR, ExponentialLR and LinearLR, whose chainable forms compound so in
 * PyTorch). The schedulers must steer one optimizer; made after one another on it, they all start
 * from the first one's rates (PyTorch's initial_lr). The composite takes them over: free only it.
 * Not ReduceLROnPlateau. */
ct_status ct_lr_scheduler_sequential(ct_lr_scheduler *const *schedulers, int64_t count, const int64_t *milestones,
                                     ct_lr_scheduler **out);
ct_status ct_lr_scheduler_chained(ct_lr_scheduler *const *schedulers, int64_t count, ct_lr_scheduler **out);
/* ReduceLROnPlateau: after more than patience steps whose metric is not better than the best by
 * threshold (relative, or absolute), each group's lr becomes max(lr * factor, min_lr) where that
 * changes it by more than eps, then cooldown steps without counting. Stepped with
 * ct_lr_scheduler_step_metric only (ct_lr_scheduler_step and ct_lr_scheduler_set_last_epoch are
 * errors for it: its rate has no closed form). */
typedef struct ct_plateau_options {
    bool maximize;      /* false: mode 'min' */
    double factor;      /* 0.1 */
    int64_t patience;   /* 10 */
    double threshold;   /* 1e-4 */
    bool threshold_abs; /* false: threshold_mode 'rel' */
    int64_t cooldown;   /* 0 */
    double min_lr;      /* 0 */
    double eps;         /* 1e-8 */
} ct_plateau_options;
ct_plateau_options ct_plateau_options_default(void);
/* options NULL: the defaults. */
ct_status ct_lr_scheduler_reduce_on_plateau(ct_optimizer *optimizer, const ct_plateau_options *options,
                                            ct_lr_scheduler **out);
ct_status ct_lr_scheduler_step_metric(ct_lr_scheduler *scheduler, double metric);

/* Advances the count by one and sets the optimizer's learning rate. */
ct_status ct_lr_scheduler_step(ct_lr_scheduler *scheduler);
/* The learning rate the scheduler last set (get_last_lr()[0]: group 0's); NaN for NULL. */
double ct_lr_scheduler_get_last_lr(const ct_lr_scheduler *scheduler);
/* The count of steps (PyTorch's last_epoch; 0 after construction); -1 for NULL. */
int64_t ct_lr_scheduler_last_epoch(const ct_lr_scheduler *scheduler);
/* Resuming: sets the count and applies its learning rate (as load_state_dict then get_last_lr). */
ct_status ct_lr_scheduler_set_last_epoch(ct_lr_scheduler *scheduler, int64_t last_epoch);
/* "StepLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR", "WarmupCosine", "ExponentialLR",
 * "MultiStepLR", "LambdaLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau". */
const char *ct_lr_scheduler_kind(const ct_lr_scheduler *scheduler);
/* NULL-safe; leaves the optimizer's learning rate as it is. */
void ct_lr_scheduler_free(ct_lr_scheduler *scheduler);

#ifdef __cplusplus
}
#endif
#endif
