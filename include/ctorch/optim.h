/* ctorch optim: SGD, Adam and AdamW (torch.optim), one parameter group.
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
} ct_adam_options;
/* lr, betas (0.9, 0.999), eps 1e-8, weight decay 0 (Adam's default). */
ct_adam_options ct_adam_options_default(double lr);
/* The same with weight decay 0.01 (AdamW's default). */
ct_adam_options ct_adamw_options_default(double lr);

/* Optimizers over every parameter of a module (ct_module_named_parameters' order)... */
ct_optimizer *ct_optim_sgd(const ct_module *module, const ct_sgd_options *options);
ct_optimizer *ct_optim_adam(const ct_module *module, const ct_adam_options *options);
ct_optimizer *ct_optim_adamw(const ct_module *module, const ct_adam_options *options);
/* ...or over a list of floating leaf tensors (each made to require grad). */
ct_optimizer *ct_optim_sgd_params(ct_tensor *const *params, int64_t count, const ct_sgd_options *options);
ct_optimizer *ct_optim_adam_params(ct_tensor *const *params, int64_t count, const ct_adam_options *options);
ct_optimizer *ct_optim_adamw_params(ct_tensor *const *params, int64_t count, const ct_adam_options *options);
/* Releases the parameters and the state. NULL-safe. */
void ct_optimizer_free(ct_optimizer *optimizer);

/* One update of every parameter that has a gradient. */
ct_status ct_optimizer_step(ct_optimizer *optimizer);
/* Drops every parameter's gradient (set_to_none=True). */
void ct_optimizer_zero_grad(ct_optimizer *optimizer);

/* "SGD", "Adam", "AdamW". */
const char *ct_optimizer_kind(const ct_optimizer *optimizer);
int64_t ct_optimizer_param_count(const ct_optimizer *optimizer);
/* A new reference to parameter index (in the optimizer's order). */
ct_tensor *ct_optimizer_param(const ct_optimizer *optimizer, int64_t index);
/* The learning rate, and changing it between steps (a schedule). */
double ct_optimizer_lr(const ct_optimizer *optimizer);
ct_status ct_optimizer_set_lr(ct_optimizer *optimizer, double lr);
/* Steps taken (Adam's t, counted per parameter in PyTorch; this is the largest of them). */
int64_t ct_optimizer_steps(const ct_optimizer *optimizer);
/* A new reference to a state tensor of parameter index ("momentum_buffer", "exp_avg",
 * "exp_avg_sq"), or NULL with CT_ERR_INDEX when there is none yet. */
ct_tensor *ct_optimizer_state(const ct_optimizer *optimizer, int64_t index, const char *name);

/* ---- checkpoints ----
 * The optimizer's state as a state dict (save it with ct_save): PyTorch's structure as names,
 *     param_groups.0.lr, param_groups.0.momentum, ...   (float64 scalars: the hyperparameters)
 *     param_groups.0.params                              (int64 [count]: the parameter order)
 *     state.<i>.step, state.<i>.exp_avg, ...             (per parameter that has taken a step)
 * with the metadata "optimizer" = "SGD" | "Adam" | "AdamW". The state tensors are detached views
 * on their parameters' devices. */
ct_state_dict *ct_optimizer_state_dict(const ct_optimizer *optimizer);
/* Restores hyperparameters, steps and state (copied onto each parameter's device and dtype) into
 * an optimizer of the same kind over parameters of the same count and shapes. Everything is
 * checked first: on an error nothing changes. */
ct_status ct_optimizer_load_state_dict(ct_optimizer *optimizer, const ct_state_dict *sd);

#ifdef __cplusplus
}
#endif
#endif
