/* ctorch nn: modules (torch.nn.Module), layers and losses.
 *
 * A module has a kind ("Linear"), named parameters (leaf tensors that require grad), named
 * buffers (tensors that are state but not trained, as BatchNorm's running_mean), named children
 * in registration order, and a train/eval flag. Names of a module tree are dotted paths:
 * "0.weight", "encoder.fc.bias".
 *
 * Ownership: modules are refcounted. Every constructor returns a new reference, dropped with
 * ct_module_release (ct_module_free is the same call). Registering a child or a tensor takes a
 * reference to it; the caller keeps its own (ct_sequential and ct_module_list are the exception:
 * they take over the references they are given). Functions that return a ct_tensor * return a new
 * reference (as everywhere in ctorch); ct_module_child returns a borrowed module.
 *
 * Moving: ct_module_to moves every parameter, buffer and gradient to a device IN PLACE: the
 * module and its parameter tensors keep their identity (as PyTorch's module.to sets param.data),
 * so pointers to them held elsewhere (an optimizer, the caller) see the moved data. Compare
 * ct_to, which makes a new tensor and leaves the original where it was. */
#ifndef CTORCH_NN_H
#define CTORCH_NN_H

#include "ctorch/io.h"
#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_module ct_module;

/* ---- the module base ---- */

/* A module's forward: computes the output for input and returns a new reference (NULL with an
 * error on failure). It is ordinary user code: release intermediates (or open a scope and
 * ct_scope_keep the result), and return ct_retain(input) rather than input itself. */
typedef ct_tensor *(*ct_module_forward_fn)(ct_module *self, const ct_tensor *input);

/* A custom module (a class deriving from nn.Module): kind names it in messages and printing;
 * forward may be NULL for a container that is not called (ModuleList); data is the module's own
 * (ct_module_data), freed with free_data (may be NULL) when the module is. */
ct_module *ct_module_create(const char *kind, ct_module_forward_fn forward, void *data,
                            void (*free_data)(void *data)); /* a new reference */
ct_module *ct_module_retain(ct_module *m); /* another reference to m (m itself) */
/* Drops one reference; the last one releases the parameters, buffers and children. NULL-safe. */
void ct_module_release(ct_module *m);
void ct_module_free(ct_module *m); /* the same call as ct_module_release */
int ct_module_refcount(const ct_module *m);
const char *ct_module_kind(const ct_module *m); /* borrowed: valid while m lives */
void *ct_module_data(const ct_module *m);       /* borrowed: the module's own */

/* Names are non-empty, without '.', and unique within a module across parameters, buffers and
 * children. A parameter must be a floating leaf; it is made to require grad. A buffer may be
 * any tensor. The module takes a reference. */
ct_status ct_module_register_parameter(ct_module *m, const char *name, ct_tensor *parameter); /* retains parameter */
ct_status ct_module_register_buffer(ct_module *m, const char *name, ct_tensor *buffer);          /* retains buffer */
ct_status ct_module_register_module(ct_module *m, const char *name, ct_module *child);           /* retains child */

/* Lookups by name; a dotted path reaches into children ("encoder.fc.weight"). NULL with
 * CT_ERR_INDEX when there is no such name. Tensors are new references; the child is borrowed. */
ct_tensor *ct_module_parameter(const ct_module *m, const char *name); /* a new reference */
ct_tensor *ct_module_buffer(const ct_module *m, const char *name);    /* a new reference */
ct_module *ct_module_child(const ct_module *m, const char *name);     /* borrowed: valid while m holds it */
/* Direct children in registration order (borrowed); NULL with CT_ERR_INDEX out of range. */
int ct_module_child_count(const ct_module *m);
ct_module *ct_module_child_at(const ct_module *m, int index); /* borrowed */

/* Runs the module's forward: one input (borrowed), one output (a new reference). For a module
 * made by ct_module_create_many this is forward_many with one input and one output. */
ct_tensor *ct_module_forward(ct_module *m, const ct_tensor *input);

/* ---- forwards of several inputs and outputs ----
 * nanoGPT's forward(idx, targets=None) -> (logits, loss), or a padding mask as a second input.
 * inputs[0..num_inputs) are borrowed; an entry may be NULL, as Python's None, for the module to
 * accept or refuse. The forward writes outputs[0..num_outputs): new references, or NULL for a
 * None output (a loss without targets). It returns CT_OK, or an error with every output NULL
 * (ct_module_forward_many releases whatever a failing forward left there). Like a one-input
 * forward it is ordinary user code: release intermediates or use a scope. */
typedef ct_status (*ct_module_forward_many_fn)(ct_module *self, const ct_tensor *const *inputs, int num_inputs,
                                               ct_tensor **outputs, int num_outputs);
/* A custom module with such a forward; otherwise as ct_module_create. */
ct_module *ct_module_create_many(const char *kind, ct_module_forward_many_fn forward, void *data,
                                 void (*free_data)(void *data));
/* Runs a module's forward on num_inputs (>= 0) inputs into num_outputs (>= 1) outputs. A module
 * with a one-input forward takes exactly one input (not NULL) and gives one output. On an error
 * every outputs[k] is NULL. */
ct_status ct_module_forward_many(ct_module *m, const ct_tensor *const *inputs, int num_inputs,
                                 ct_tensor **outputs, int num_outputs);

/* ---- walking a module tree ---- */

/* module.apply(fn): calls fn(module, context) on every module of the tree, each child's subtree
 * before its parent (PyTorch's order, so that fn sees the root last), a module reachable twice
 * once. Stops at, and returns, the first status other than CT_OK. Modules are borrowed by fn. */
ct_status ct_module_apply(ct_module *m, ct_status (*fn)(ct_module *module, void *context), void *context);

/* module.named_modules(): every module of the tree with its dotted name, m itself first under
 * "", then depth first in registration order ("encoder", "encoder.0", ...), a module reachable
 * under two names listed once, under the first. The list holds a reference to each module;
 * ct_named_modules_free drops them. */
typedef struct ct_named_modules {
    int64_t count;
    char **names;
    ct_module **modules;
} ct_named_modules;
ct_named_modules *ct_module_named_modules(const ct_module *m);
void ct_named_modules_free(ct_named_modules *list); /* NULL-safe */

/* train(true) / eval(): sets the flag of the module and of every module below it. */
void ct_module_train(ct_module *m, bool training);
void ct_module_eval(ct_module *m);
bool ct_module_is_training(const ct_module *m);

/* Tensors of a module tree with their dotted names, in registration order (a module's own
 * tensors, then each child's, depth first). A tensor reachable under two names is listed once,
 * under the first (as PyTorch's named_parameters). The list holds a reference to each tensor. */
typedef struct ct_named_tensors {
    int64_t count;
    char **names;
    ct_tensor **tensors;
} ct_named_tensors;
ct_named_tensors *ct_module_named_parameters(const ct_module *m);
ct_named_tensors *ct_module_named_buffers(const ct_module *m);
void ct_named_tensors_free(ct_named_tensors *list);
/* How many parameter tensors, and how many elements they hold (a model's "parameter count"). */
int64_t ct_module_parameter_count(const ct_module *m);
int64_t ct_module_num_parameters(const ct_module *m);

/* Drops the gradient of every parameter (zero_grad(set_to_none=True)). */
void ct_module_zero_grad(ct_module *m);

/* Moves every parameter, buffer and gradient of the tree to device in place (see the top of
 * this file). Either everything moves or, on an error, nothing does. Optimizers built on the
 * module move their state on their next step. */
ct_status ct_module_to(ct_module *m, ct_device device);
/* Converts every floating parameter, buffer and gradient to dtype (float32, float64, float16 or
 * bfloat16) in place, as module.float() / double() / half() / bfloat16(); integer buffers keep
 * their dtype. All or nothing. */
ct_status ct_module_to_dtype(ct_module *m, ct_dtype dtype);
/* The device of the first parameter or buffer (the cpu for a module without tensors). */
ct_device ct_module_device(const ct_module *m);

/* ---- checkpoints (ct_save / ct_load in include/ctorch/io.h) ---- */

/* A new state dict of the module's parameters and buffers under their dotted names (each
 * module's parameters, then its buffers, then its children's, as PyTorch orders them), each a
 * detached view of the module's tensor on its device. prefix (may be NULL) goes in front of every
 * name ("module." to write a DataParallel-style checkpoint). */
ct_state_dict *ct_module_state_dict(const ct_module *m, const char *prefix);

#define CT_LOAD_REPORT_MAX 1024
/* What ct_module_load_state_dict did. message is PyTorch's "Error(s) in loading state_dict for
 * Net: Missing key(s) in state_dict: ... Unexpected key(s) in state_dict: ... size mismatch for
 * ...", on one line ("" when every name matched). */
typedef struct ct_load_report {
    int64_t loaded;     /* module tensors given the state dict's values */
    int64_t missing;    /* module names the state dict lacks */
    int64_t unexpected; /* state dict names the module lacks */
    int64_t mismatched; /* names in both with different shapes */
    char message[CT_LOAD_REPORT_MAX];
} ct_load_report;
/* Copies the state dict's values into the module's tensors (onto their device and into their
 * dtype, wherever sd's tensors are), keeping the tensor objects. strict: any missing, unexpected
 * or mismatched name fails (CT_ERR_INVALID_ARGUMENT, with every one of them in the message) and
 * nothing changes. Not strict: loads what matches, logs a warning with the message and returns
 * CT_OK. report may be NULL. */
ct_status ct_module_load_state_dict(ct_module *m, const ct_state_dict *sd, bool strict,
                                    ct_load_report *report);

/* PyTorch's printout: "Sequential(\n  (0): Linear(in_features=3, out_features=3, bias=True)\n)".
 * The string is malloc'ed. */
char *ct_module_to_string(const ct_module *m);
/* A one-line description of a custom module's settings, shown in its printout's parentheses
 * (extra_repr); the string is malloc'ed by the callback. */
ct_status ct_module_set_describe(ct_module *m, char *(*describe)(const ct_module *m));

/* ---- layers (new modules; every constructor returns NULL with an error on bad arguments) ---- */

/* y = x W^T + b, W [out, in], b [out]. PyTorch's initialisation from the global seed (ct_rand on
 * the cpu): W ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a = sqrt(5)), b alike. */
ct_module *ct_linear(int64_t in_features, int64_t out_features, bool bias);
ct_module *ct_relu_module(void);
ct_module *ct_gelu_module(void); /* exact GELU (approximate='none') */
/* nn.GELU(approximate=...): "none" (ct_gelu) or "tanh" (ct_gelu_tanh); anything else is refused. */
ct_module *ct_gelu_module_approximate(const char *approximate);
ct_module *ct_sigmoid_module(void);
ct_module *ct_tanh_module(void);
ct_module *ct_silu_module(void); /* nn.SiLU: ct_silu */
/* nn.LeakyReLU(negative_slope) (PyTorch's default 0.01): ct_leaky_relu. */
ct_module *ct_leaky_relu_module(double negative_slope);
/* nn.Softplus(beta, threshold) (defaults 1 and 20): ct_softplus; beta nonzero. */
ct_module *ct_softplus_module(double beta, double threshold);
/* nn.ELU(alpha) (default 1): ct_elu. */
ct_module *ct_elu_module(double alpha);
/* Flattens dims start_dim..end_dim (nn.Flatten's defaults are 1, -1). */
ct_module *ct_flatten_module(int start_dim, int end_dim);
/* Zeroes each element with probability p while training (a mask from ct_rand on the input's
 * device) and scales the rest by 1 / (1 - p); the identity in eval mode. 0 <= p <= 1. */
ct_module *ct_dropout(double p);
/* nanoGPT's CausalSelfAttention: x [B, T, n_embd] -> [B, T, n_embd]. c_attn (Linear(n_embd,
 * 3 n_embd, bias)) gives q, k and v, split into n_head heads; causal
 * ct_scaled_dot_product_attention (dropout on its weights while training); the heads joined, then
 * c_proj (Linear(n_embd, n_embd, bias)) and resid_dropout (Dropout(dropout)). Parameter names
 * are nanoGPT's: c_attn.weight, c_attn.bias, c_proj.weight, c_proj.bias. n_embd must be a
 * multiple of n_head; 0 <= dropout < 1. */
ct_module *ct_causal_self_attention(int64_t n_embd, int64_t n_head, double dropout, bool bias);
/* Calls its children in order; they are named "0", "1", ... It TAKES OVER the caller's
 * references in modules (also on failure, when they are released), so that layers can be made
 * inline: ct_sequential((ct_module *[]){ct_linear(4, 8, true), ct_relu_module()}, 2). */
ct_module *ct_sequential(ct_module *const *modules, int count);
/* Appends a module to a Sequential or a ModuleList (named by its position); like
 * ct_module_register_module it takes its own reference. */
ct_status ct_sequential_append(ct_module *sequential, ct_module *module);
/* A list of modules named "0", "1", ... that is not called itself (nn.ModuleList); takes over
 * the references in modules as ct_sequential does. */
ct_module *ct_module_list(ct_module *const *modules, int count);

/* A dict of modules that is not called itself (nn.ModuleDict): modules[i] is the child named
 * names[i], in that order; reach them with ct_module_child (borrowed) and add more with
 * ct_module_register_module. It takes over the references in modules as ct_sequential does. */
ct_module *ct_module_dict(const char *const *names, ct_module *const *modules, int count);
/* nn.Identity: returns its input (a new reference to the same tensor, as PyTorch returns the
 * object itself). */
ct_module *ct_identity_module(void);
/* nn.Unflatten(dim, unflattened_size): dim (negative counts from the end) becomes count dims of
 * sizes[0..count) (one may be -1), whose product is the size of dim; a view of the input. */
ct_module *ct_unflatten_module(int dim, const int64_t *sizes, int count);

/* nn.Conv2d: weight [out, in / groups, kH, kW] and bias [out], initialised as Linear's with
 * fan_in = in / groups * kH * kW; the forward is ct_conv2d (include/ctorch/nn_functional.h). */
typedef struct ct_conv2d_options {
    int64_t stride[2], padding[2], dilation[2];
    int64_t groups;
    bool bias;
} ct_conv2d_options;
/* stride 1, padding 0, dilation 1, groups 1, with bias. */
ct_conv2d_options ct_conv2d_options_default(void);
/* options NULL means the defaults. */
ct_module *ct_conv2d_module(int64_t in_channels, int64_t out_channels, const int64_t kernel_size[2],
                            const ct_conv2d_options *options);
/* nn.MaxPool2d / nn.AvgPool2d: stride NULL means the kernel size, padding NULL means 0. */
ct_module *ct_max_pool2d_module(const int64_t kernel_size[2], const int64_t stride[2],
                                const int64_t padding[2]);
ct_module *ct_avg_pool2d_module(const int64_t kernel_size[2], const int64_t stride[2],
                                const int64_t padding[2], bool count_include_pad);
/* nn.BatchNorm1d ([N, C] or [N, C, L] input) and nn.BatchNorm2d ([N, C, H, W]): parameters weight
 * (ones) and bias (zeros) when affine; buffers running_mean (zeros), running_var (ones) and
 * num_batches_tracked (int64) when track_running_stats. Training normalises with the batch's
 * statistics and updates the running ones (running = (1 - momentum) running + momentum batch);
 * eval mode normalises with the running ones. */
typedef struct ct_batch_norm_options {
    double eps, momentum;
    bool affine, track_running_stats;
} ct_batch_norm_options;
/* eps 1e-5, momentum 0.1, affine, tracking running statistics. */
ct_batch_norm_options ct_batch_norm_options_default(void);
ct_module *ct_batch_norm1d(int64_t num_features, const ct_batch_norm_options *options);
ct_module *ct_batch_norm2d(int64_t num_features, const ct_batch_norm_options *options);

/* nn.LayerNorm(normalized_shape, eps, elementwise_affine): ct_layer_norm over the input's last
 * ndim dims; parameters `weight` (ones) and `bias` (zeros) of that shape when affine. */
ct_module *ct_layer_norm_module(const int64_t *shape, int ndim, double eps, bool elementwise_affine);
/* nn.Embedding(num_embeddings, embedding_dim, padding_idx): ct_embedding of the module's input,
 * an int32/int64 index tensor; parameter `weight` [num_embeddings, embedding_dim] ~ N(0, 1) from
 * the global seed with row padding_idx zeroed (-1: none). */
ct_module *ct_embedding_module(int64_t num_embeddings, int64_t embedding_dim, int64_t padding_idx);

/* ---- torch.nn.init: in-place fills from the tensor's device generator (ct_manual_seed), any
 * device, recording nothing (a parameter stays a leaf). Random fills need a floating tensor. ---- */
/* nn.init.uniform_: U(a, b), a <= b. */
ct_status ct_init_uniform_(ct_tensor *t, double a, double b);
/* nn.init.normal_: N(mean, std^2), std >= 0. */
ct_status ct_init_normal_(ct_tensor *t, double mean, double std);
/* nn.init.constant_, zeros_, ones_ (any dtype). */
ct_status ct_init_constant_(ct_tensor *t, double value);
ct_status ct_init_zeros_(ct_tensor *t);
ct_status ct_init_ones_(ct_tensor *t);
/* nn.init._calculate_fan_in_and_fan_out: for [out, in, k...] fan_in = in * prod(k), fan_out =
 * out * prod(k); at least 2 dims (CT_ERR_SHAPE otherwise). Either pointer may be NULL. */
ct_status ct_calculate_fan_in_and_fan_out(const ct_tensor *t, int64_t *fan_in, int64_t *fan_out);
/* nn.init.calculate_gain: linear, conv*, sigmoid 1; tanh 5/3; relu sqrt(2); selu 3/4; leaky_relu
 * sqrt(2 / (1 + slope^2)) with slope param (NAN: PyTorch's default 0.01). */
ct_status ct_calculate_gain(const char *nonlinearity, double param, double *gain);
/* nn.init.xavier_uniform_: U(-b, b), b = gain sqrt(6 / (fan_in + fan_out)); xavier_normal_:
 * N(0, gain^2 2 / (fan_in + fan_out)). */
ct_status ct_init_xavier_uniform_(ct_tensor *t, double gain);
ct_status ct_init_xavier_normal_(ct_tensor *t, double gain);
/* The fan kaiming_* divides by (PyTorch's mode='fan_in' / 'fan_out'). */
typedef enum ct_fan_mode { CT_FAN_IN = 0, CT_FAN_OUT } ct_fan_mode;
/* nn.init.kaiming_uniform_: U(-b, b), b = sqrt(3) gain / sqrt(fan); kaiming_normal_:
 * N(0, gain^2 / fan); gain = ct_calculate_gain(nonlinearity, a) (NULL: "leaky_relu", PyTorch's
 * default, with a = 0 giving sqrt(2)). */
ct_status ct_init_kaiming_uniform_(ct_tensor *t, double a, ct_fan_mode mode, const char *nonlinearity);
ct_status ct_init_kaiming_normal_(ct_tensor *t, double a, ct_fan_mode mode, const char *nonlinearity);
/* nn.init.trunc_normal_: N(mean, std^2) restricted to [a, b] (PyTorch's defaults 0, 1, -2, 2);
 * drawn by rejection (values outside drawn again), one read back per round. */
ct_status ct_init_trunc_normal_(ct_tensor *t, double mean, double std, double a, double b);

/* ---- losses: composed of differentiable ops, so they run (and backpropagate) on any device.
 * Each returns the mean over the batch as a one-element tensor. ---- */

/* mean((input - target)^2) over every element; same shapes. */
ct_tensor *ct_mse_loss(const ct_tensor *input, const ct_tensor *target);
/* logits [N, C], target int64 class indices [N] in [0, C): the mean over N of
 * -sum_c q_c log_softmax(logits)_c with q = (1 - label_smoothing) one_hot(target) +
 * label_smoothing / C. 0 <= label_smoothing <= 1.
 * (reduction, ignore_index, class weights, [N, C, d...]: ct_cross_entropy_ex below.) */
ct_tensor *ct_cross_entropy(const ct_tensor *logits, const ct_tensor *target, double label_smoothing);
/* log_probs [N, C] (log-probabilities, as from ct_log_softmax), target int64 [N]:
 * mean over N of -log_probs[n, target[n]]. */
ct_tensor *ct_nll_loss(const ct_tensor *log_probs, const ct_tensor *target);


/* ---- losses with a reduction (torch.nn.functional's, reduction= 'mean', 'sum', 'none'; 'batchmean'
 * for ct_kl_div only). CT_REDUCTION_MEAN is 0, so a zeroed options struct asks for the mean. Each is
 * composed of differentiable ops: any device, any floating dtype; 'none' gives the elementwise
 * losses in the input's shape. input and target must have the same shape. ---- */
typedef enum ct_reduction {
    CT_REDUCTION_MEAN = 0,
    CT_REDUCTION_SUM,
    CT_REDUCTION_NONE,
    CT_REDUCTION_BATCHMEAN /* the sum divided by the input's first dim (KLDiv's) */
} ct_reduction;

/* F.binary_cross_entropy: -weight (y log x + (1 - y) log(1 - x)), each log clamped at -100 as
 * PyTorch; input probabilities in [0, 1] (checked: one read back), weight NULL or broadcastable. */
ct_tensor *ct_binary_cross_entropy(const ct_tensor *input, const ct_tensor *target,
                                   const ct_tensor *weight, ct_reduction reduction);
/* F.binary_cross_entropy_with_logits: -weight (p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x)))
 * in the stable form (1 - y) x + (1 + (p - 1) y) softplus(-x); pos_weight p (NULL: 1) broadcasts
 * along the last dim as PyTorch's, weight NULL or broadcastable. */
ct_tensor *ct_binary_cross_entropy_with_logits(const ct_tensor *input, const ct_tensor *target,
                                               const ct_tensor *weight, const ct_tensor *pos_weight,
                                               ct_reduction reduction);
/* F.l1_loss: |x - y|. */
ct_tensor *ct_l1_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction);
/* F.smooth_l1_loss: 0.5 d^2 / beta where |d| < beta, else |d| - beta / 2 (d = x - y); beta >= 0
 * (PyTorch's default 1; 0 is the L1 loss). */
ct_tensor *ct_smooth_l1_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction,
                             double beta);
/* F.huber_loss: 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2); delta > 0 (default 1). */
ct_tensor *ct_huber_loss(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction,
                         double delta);
/* F.kl_div: input log-probabilities, target probabilities (log-probabilities when log_target):
 * target (log target - input) elementwise, 0 where target is 0. PyTorch's 'mean' divides by every
 * element; CT_REDUCTION_BATCHMEAN (the mathematical KL divergence) by the batch size. */
ct_tensor *ct_kl_div(const ct_tensor *input, const ct_tensor *target, ct_reduction reduction,
                     bool log_target);

/* Options of ct_cross_entropy_ex and ct_nll_loss_ex (F.cross_entropy / F.nll_loss keywords). */
typedef struct ct_cross_entropy_options {
    ct_reduction reduction;   /* MEAN (the weighted mean over the targets not ignored), SUM or NONE */
    int64_t ignore_index;     /* targets equal to it add nothing (and get no gradient); -100 */
    const ct_tensor *weight;  /* class weights [C] (borrowed) or NULL */
    double label_smoothing;   /* in [0, 1]; cross-entropy only (nll_loss refuses it) */
} ct_cross_entropy_options;
/* {CT_REDUCTION_MEAN, -100, NULL, 0.0}: PyTorch's defaults. */
ct_cross_entropy_options ct_cross_entropy_options_default(void);
/* F.cross_entropy with class-index targets: logits [N, C] with target [N], [N, C, d1, ...] with
 * target [N, d1, ...] (class scores along dim 1), or [C] with a 0-d target; int64 targets in
 * [0, C) or equal to ignore_index. The mean divides by the sum of the weights of the targets not
 * ignored (NaN when all are). options NULL: the defaults. 'none' gives the target's shape. */
ct_tensor *ct_cross_entropy_ex(const ct_tensor *logits, const ct_tensor *target,
                               const ct_cross_entropy_options *options);
/* F.nll_loss with the same shapes and options, from log-probabilities. */
ct_tensor *ct_nll_loss_ex(const ct_tensor *log_probs, const ct_tensor *target,
                          const ct_cross_entropy_options *options);

/* ---- gradient clipping (torch.nn.utils.clip_grad_norm_) ----
 * The norm of the gradients of params[0..count) taken together: for norm_type p >= 1 (2 is the
 * Euclidean norm) (sum over every element of |g|^p)^(1/p), for INFINITY the largest |g|. Each
 * gradient is scaled in place by min(1, max_norm / (total_norm + 1e-6)), as PyTorch does (with
 * error_if_nonfinite=False: a NaN total makes the gradients NaN; the total says so). Parameters
 * without a gradient are skipped (none at all: the total is 0). *total_norm (may be NULL) receives
 * the norm before clipping. Gradients may be on any devices. Fused: per device and dtype, the
 * sums of |g|^p of 8 gradients a launch (partial sums of 256 elements each, in float64: float32
 * gradients near 1e30 do not overflow), and the scaling 8 gradients a launch. Gradients all of one device and dtype are clipped
 * there with nothing read back (the partials folded in float64 on the device, the scaling reading
 * the factor there, as PyTorch's clip_grad_norm_ never waits): the host waits only when
 * total_norm is not NULL, and a captured step (ct_graph_begin) can clip with total_norm NULL.
 * Otherwise one read back per device and dtype, combined in float64 on the host. The norm is the
 * same on every device (for p = 1, 2 and infinity: the other roots are pow's). max_norm >= 0. */
ct_status ct_clip_grad_norm_(ct_tensor *const *params, int64_t count, double max_norm, double norm_type,
                             double *total_norm);
/* The same over every parameter of module (ct_module_named_parameters: clip_grad_norm_(
 * model.parameters(), ...)). */
ct_status ct_clip_grad_norm_module(const ct_module *module, double max_norm, double norm_type, double *total_norm);

#ifdef __cplusplus
}
#endif
#endif
