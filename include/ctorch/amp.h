/* ctorch amp: automatic mixed precision (torch.autocast and torch.amp.GradScaler).
 *
 * Autocast. Inside a region opened with ct_autocast_push(device_type, dtype) on a thread, ops on
 * tensors of that device type choose their own precision, as PyTorch's autocast does:
 *   - matrix products (ct_matmul, ct_linear, ct_conv2d, ct_scaled_dot_product_attention's q,
 *     k and v) run in the region's dtype (float16 or bfloat16): their float32 inputs are cast
 *     to it first, so the tensor cores do the work;
 *   - ops that need float32's range (ct_softmax, ct_log_softmax, ct_cross_entropy, ct_nll_loss,
 *     ct_mse_loss, ct_batch_norm's input, ct_sum, ct_mean, ct_var, ct_std) run in float32:
 *     16-bit inputs are cast up first;
 *   - every other op takes its inputs as they are, and mixed inputs promote to the widest
 *     (float16 + float32 gives float32), which is PyTorch's "promote" list.
 * float64 tensors, integer tensors and tensors on other device types are never cast. The casts
 * are ordinary ct_to_dtype ops recorded by autograd, so a float32 parameter used by a bfloat16
 * product gets its gradient in float32 (master weights). Regions nest; each thread has its own.
 * A region with dtype CT_F32 turns autocast off for its device type until it is popped (as
 * torch.autocast(enabled=False) inside an enabled region).
 *
 * Gradient scaling. float16's range ends at 65504 and its smallest normal is 6e-5: small
 * gradients underflow to zero. A scaler multiplies the loss by a large factor before backward,
 * divides the gradients by it before the optimizer step, and skips a step whose gradients hold an
 * inf or NaN, lowering the factor; after growth_interval good steps in a row it raises it again.
 * The use is PyTorch's:
 *     loss = forward under autocast;
 *     ct_backward(ct_grad_scaler_scale(scaler, loss));
 *     ct_grad_scaler_step(scaler, optimizer, NULL);   (unscales first, unless already unscaled)
 *     ct_grad_scaler_update(scaler);
 * Gradients must be float32 (or float64): unscaling float16 gradients is refused, as PyTorch
 * refuses it (keep float32 parameters and let autocast cast them). */
#ifndef CTORCH_AMP_H
#define CTORCH_AMP_H

#include "ctorch/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- autocast ---- */

/* Opens a region on this thread for tensors of device_type: dtype CT_F16 or CT_BF16 turns
 * autocast on in that dtype, CT_F32 turns it off. Errors: CT_ERR_DTYPE for another dtype,
 * CT_ERR_DEVICE for an invalid device type, CT_ERR_INVALID_ARGUMENT past 64 nested regions. */
ct_status ct_autocast_push(ct_device_type device_type, ct_dtype dtype);
/* Closes the innermost region of this thread (CT_ERR_INVALID_ARGUMENT when none is open). */
ct_status ct_autocast_pop(void);
/* Is autocast on for device_type on this thread (torch.is_autocast_enabled), and in which dtype
 * (CT_F32 when it is off). A backward runs without it (off in its functions and hooks, even
 * when ct_backward is called inside a region): each gradient takes its input's dtype. */
bool ct_autocast_enabled(ct_device_type device_type);
ct_dtype ct_autocast_dtype(ct_device_type device_type);

/* ---- the gradient scaler ---- */

typedef struct ct_grad_scaler ct_grad_scaler;

typedef struct ct_grad_scaler_options {
    double init_scale;      /* 65536 */
    double growth_factor;   /* 2: the scale after growth_interval steps without inf/NaN */
    double backoff_factor;  /* 0.5: the scale after a step with inf/NaN */
    int64_t growth_interval; /* 2000 */
    bool enabled;           /* false: every call passes through (scale 1, steps never skipped) */
} ct_grad_scaler_options;
ct_grad_scaler_options ct_grad_scaler_options_default(void);

/* NULL options: the defaults. Errors: CT_ERR_INVALID_ARGUMENT naming a bad option (a scale that
 * is not positive and finite, growth_factor <= 1, backoff_factor outside (0, 1), an interval < 1). */
ct_grad_scaler *ct_grad_scaler_new(const ct_grad_scaler_options *options);
void ct_grad_scaler_free(ct_grad_scaler *scaler);
/* loss * scale (a new tensor, recorded by autograd); the loss itself when disabled. */
ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *scaler, const ct_tensor *loss);
/* Divides the gradients of the optimizer's parameters by the scale, in place, and notes whether
 * any holds an inf or NaN (one host synchronisation for all of them). Fused, as PyTorch's
 * _amp_foreach_non_finite_check_and_unscale_: per device and dtype a launch of the check and one
 * of the unscaling per 8 gradients. Once per step: a second call before ct_grad_scaler_update is
 * CT_ERR_INVALID_ARGUMENT. Use it before clipping gradients. */
ct_status ct_grad_scaler_unscale_(ct_grad_scaler *scaler, ct_optimizer *optimizer);
/* Unscales (if not yet done this step) and runs ct_optimizer_step unless a gradient held an inf
 * or NaN; *stepped (may be NULL) says which. */
ct_status ct_grad_scaler_step(ct_grad_scaler *scaler, ct_optimizer *optimizer, bool *stepped);
/* The smallest scale: FLT_MIN (2^-126, the smallest normal float32). A scale backed off below it
 * stays there (142 skipped steps in a row from 65536 by halves), so that 1 / scale stays finite;
 * steps whose gradients overflow even then go on being skipped (ct_grad_scaler_skipped_steps). */
#define CT_GRAD_SCALER_MIN_SCALE 1.1754943508222875e-38
/* Adjusts the scale after a step: backoff after inf/NaN (floored at CT_GRAD_SCALER_MIN_SCALE),
 * growth after growth_interval good steps (never past FLT_MAX).
 * CT_ERR_INVALID_ARGUMENT when no step was unscaled since the last update. */
ct_status ct_grad_scaler_update(ct_grad_scaler *scaler);
/* The current scale (1 when disabled), and how many steps were skipped so far. */
double ct_grad_scaler_get_scale(const ct_grad_scaler *scaler);
int64_t ct_grad_scaler_skipped_steps(const ct_grad_scaler *scaler);
/* The state a checkpoint keeps (scale and the good steps since the last change), and its
 * restoring, as GradScaler.state_dict / load_state_dict. */
ct_status ct_grad_scaler_state(const ct_grad_scaler *scaler, double *scale, int64_t *growth_tracker);
/* Loading refuses a scale outside [CT_GRAD_SCALER_MIN_SCALE, FLT_MAX] (5e-324, inf, NaN). */
ct_status ct_grad_scaler_load_state(ct_grad_scaler *scaler, double scale, int64_t growth_tracker);

#ifdef __cplusplus
}
#endif
#endif
