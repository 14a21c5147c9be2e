/* The gradient scaler (torch.amp.GradScaler): loss scaling for float16 training. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "ctorch/amp.h"
#include "ops/multi_tensor.h"
#include "optim/optimizer_internal.h"

typedef enum scaler_stage { READY, UNSCALED, STEPPED } scaler_stage;

struct ct_grad_scaler {
    ct_grad_scaler_options options;
    double scale;
    int64_t growth_tracker; /* good steps since the scale last changed */
    int64_t skipped;
    scaler_stage stage;
    bool found_inf;
};

ct_grad_scaler_options ct_grad_scaler_options_default(void)
{
    return (ct_grad_scaler_options){.init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5,
                                    .growth_interval = 2000, .enabled = true};
}

ct_grad_scaler *ct_grad_scaler_new(const ct_grad_scaler_options *options)
{
    ct_grad_scaler_options o = options ? *options : ct_grad_scaler_options_default();
    if (!(o.init_scale >= CT_GRAD_SCALER_MIN_SCALE && o.init_scale <= FLT_MAX))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_new: init_scale %g must be "
                             "a normal float32 from FLT_MIN to FLT_MAX (PyTorch's default is 65536)", o.init_scale);
    if (!(o.growth_factor > 1) || !isfinite(o.growth_factor))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_new: growth_factor %g must be "
                             "finite and above 1 (the default is 2)", o.growth_factor);
    if (!(o.backoff_factor > 0 && o.backoff_factor < 1))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_new: backoff_factor %g must be "
                             "between 0 and 1 (the default is 0.5)", o.backoff_factor);
    if (o.growth_interval < 1)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_new: growth_interval %lld must "
                             "be at least 1 (the default is 2000)", (long long)o.growth_interval);
    ct_grad_scaler *scaler = calloc(1, sizeof *scaler);
    if (!scaler) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_grad_scaler_new: no host memory");
    scaler->options = o;
    scaler->scale = o.init_scale;
    return scaler;
}

void ct_grad_scaler_free(ct_grad_scaler *scaler) { free(scaler); }

ct_tensor *ct_grad_scaler_scale(ct_grad_scaler *scaler, const ct_tensor *loss)
{
    if (!scaler) return ct_null_argument("ct_grad_scaler_scale", "scaler");
    if (!loss) return ct_null_argument("ct_grad_scaler_scale", "loss");
    if (!scaler->options.enabled) return ct_retain((ct_tensor *)loss);
    return ct_mul_scalar(loss, scaler->scale);
}

/* 16-bit gradients lose small values when unscaled: refused, as PyTorch refuses them. */
static ct_status check_gradient_dtypes(const char *function, const ct_optimizer *optimizer)
{
    for (int64_t i = 0; i < optimizer->count; i++) {
        ct_tensor *grad = ct_grad(optimizer->params[i].param);
        ct_dtype dtype = grad ? ct_tensor_dtype(grad) : CT_F32;
        ct_release(grad);
        if (dtype == CT_F16 || dtype == CT_BF16)
            return ct_error(CT_ERR_DTYPE, "%s: parameter %lld has a %s gradient; unscaling 16-bit "
                            "gradients loses them (as PyTorch refuses): keep float32 parameters and "
                            "let autocast cast them", function, (long long)i, ct_dtype_name(dtype));
    }
    return CT_OK;
}

/* Each gradient times 1/scale in place, and *found_inf when any unscaled element is inf or NaN,
 * as torch._amp_foreach_non_finite_check_and_unscale_: the check as partial sums of
 * g * (1/scale) * 0 (NaN exactly then; a launch per 8 gradients and one read per device and
 * dtype), then the unscaling 8 gradients a launch, where each gradient took six launches. */
static ct_status unscale_gradients(ct_optimizer *optimizer, double inverse, bool *found_inf)
{
    *found_inf = false;
    ct_status status = check_gradient_dtypes("ct_grad_scaler_unscale_", optimizer);
    if (status != CT_OK) return status;
    int64_t n = 0;
    ct_tensor **grads = ct_optim_gradients("ct_grad_scaler_unscale_", optimizer, &n);
    if (!grads) return ct_last_error();
    ct_api_enter(); /* the multi-tensor launches' temporaries are released here */
    double check = 0.0;
    status = ct_multi_tensor_power_sum(grads, n, CT_MULTI_SUM_TIMES_ZERO, inverse, &check);
    if (status == CT_OK) status = ct_multi_tensor_scale_(grads, n, inverse, NULL);
    ct_api_return(NULL);
    free(grads);
    *found_inf = status == CT_OK && isnan(check);
    return status;
}

ct_status ct_grad_scaler_unscale_(ct_grad_scaler *scaler, ct_optimizer *optimizer)
{
    if (!scaler) return ct_null_argument("ct_grad_scaler_unscale_", "scaler"), ct_last_error();
    if (!optimizer) return ct_null_argument("ct_grad_scaler_unscale_", "optimizer"), ct_last_error();
    if (!scaler->options.enabled) return CT_OK;
    if (scaler->stage != READY)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_unscale_: already called since the "
                        "last ct_grad_scaler_update (unscale once per step)");
    ct_no_grad_push();
    bool found_inf = false;
    ct_status status = unscale_gradients(optimizer, 1.0 / scaler->scale, &found_inf);
    ct_no_grad_pop();
    if (status != CT_OK) return status;
    scaler->found_inf = found_inf;
    scaler->stage = UNSCALED;
    return CT_OK;
}

ct_status ct_grad_scaler_step(ct_grad_scaler *scaler, ct_optimizer *optimizer, bool *stepped)
{
    if (stepped) *stepped = false;
    if (!scaler) return ct_null_argument("ct_grad_scaler_step", "scaler"), ct_last_error();
    if (!optimizer) return ct_null_argument("ct_grad_scaler_step", "optimizer"), ct_last_error();
    if (!scaler->options.enabled) {
        ct_status status = ct_optimizer_step(optimizer);
        if (stepped) *stepped = status == CT_OK;
        return status;
    }
    if (scaler->stage == STEPPED)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_step: already called since the "
                        "last ct_grad_scaler_update (call update after each step)");
    if (scaler->stage == READY) {
        /* not unscaled yet: the fused step checks, unscales and updates in its own launches */
        ct_status status = check_gradient_dtypes("ct_grad_scaler_step", optimizer);
        bool found_inf = false;
        if (status == CT_OK) status = ct_optimizer_step_unscaled(optimizer, 1.0 / scaler->scale, &found_inf);
        if (status != CT_OK) return status;
        scaler->found_inf = found_inf;
        scaler->stage = STEPPED;
        if (found_inf) {
            scaler->skipped++;
            ct_log_message(CT_LOG_INFO, "ct_grad_scaler_step: a gradient holds inf or NaN at scale %g; "
                           "the step is skipped", scaler->scale);
        }
        if (stepped) *stepped = !found_inf;
        return CT_OK;
    }
    scaler->stage = STEPPED;
    if (scaler->found_inf) {
        scaler->skipped++;
        ct_log_message(CT_LOG_INFO, "ct_grad_scaler_step: a gradient holds inf or NaN at scale %g; the "
               "step is skipped", scaler->scale);
        return CT_OK;
    }
    ct_status status = ct_optimizer_step(optimizer);
    if (stepped) *stepped = status == CT_OK;
    return status;
}

ct_status ct_grad_scaler_update(ct_grad_scaler *scaler)
{
    if (!scaler) return ct_null_argument("ct_grad_scaler_update", "scaler"), ct_last_error();
    if (!scaler->options.enabled) return CT_OK;
    if (scaler->stage == READY)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_update: no step was unscaled since "
                        "the last update (call ct_grad_scaler_step or ct_grad_scaler_unscale_ first)");
    if (scaler->found_inf) {
        /* floored at FLT_MIN: the scale stays a normal float32 (as PyTorch's float32 scale tensor
         * holds it) whose inverse is finite, where halving on would reach 0 and an infinite
         * inverse */
        double backed_off = scaler->scale * scaler->options.backoff_factor;
        scaler->scale = backed_off > CT_GRAD_SCALER_MIN_SCALE ? backed_off : CT_GRAD_SCALER_MIN_SCALE;
        scaler->growth_tracker = 0;
    } else if (++scaler->growth_tracker == scaler->options.growth_interval) {
        double grown = scaler->scale * scaler->options.growth_factor;
        if (grown <= FLT_MAX) scaler->scale = grown; /* as PyTorch: the float32 scale never becomes inf */
        scaler->growth_tracker = 0;
    }
    scaler->stage = READY;
    scaler->found_inf = false;
    return CT_OK;
}

double ct_grad_scaler_get_scale(const ct_grad_scaler *scaler)
{
    return scaler && scaler->options.enabled ? scaler->scale : 1.0;
}

int64_t ct_grad_scaler_skipped_steps(const ct_grad_scaler *scaler) { return scaler ? scaler->skipped : 0; }

ct_status ct_grad_scaler_state(const ct_grad_scaler *scaler, double *scale, int64_t *growth_tracker)
{
    if (!scaler || !scale || !growth_tracker)
        return ct_null_argument("ct_grad_scaler_state", !scaler ? "scaler" : !scale ? "scale" : "growth_tracker"),
               ct_last_error();
    *scale = scaler->scale;
    *growth_tracker = scaler->growth_tracker;
    return CT_OK;
}

ct_status ct_grad_scaler_load_state(ct_grad_scaler *scaler, double scale, int64_t growth_tracker)
{
    if (!scaler) return ct_null_argument("ct_grad_scaler_load_state", "scaler"), ct_last_error();
    if (!(scale >= CT_GRAD_SCALER_MIN_SCALE && scale <= FLT_MAX) || growth_tracker < 0 ||
        growth_tracker >= scaler->options.growth_interval)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_grad_scaler_load_state: scale %g and growth "
                        "tracker %lld: the scale must be from FLT_MIN (%g) to FLT_MAX (a normal float32), "
                        "the tracker from 0 to growth_interval - 1 (%lld)", scale, (long long)growth_tracker,
                        (double)CT_GRAD_SCALER_MIN_SCALE, (long long)(scaler->options.growth_interval - 1));
    scaler->scale = scale;
    scaler->growth_tracker = growth_tracker;
    return CT_OK;
}
