/* torch.nn.init: fills a tensor in place from the generator of its device (ct_manual_seed: the
 * same seed, the same values on every device), recording nothing (as PyTorch's, under no_grad).
 * The random fills draw in the tensor's dtype and device (ct_rand / ct_randn), scale and shift
 * there, and copy into the tensor, which may be a parameter or any view. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn/module_internal.h"

/* The end of a public call that returns a status (see ct_api_return). */
static ct_status leave(ct_status status)
{
    ct_api_return(NULL);
    return status;
}

/* t is not NULL and, for a random fill, floating. */
static ct_status check_target(const char *function, const ct_tensor *t, bool floating)
{
    if (!t) return ct_null_argument(function, "tensor"), ct_last_error();
    if (floating && !ct_dtype_is_floating(t->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: tensor is %s; a random fill needs a floating tensor "
                        "(float32, float64, float16 or bfloat16)", function, ct_dtype_name(t->dtype));
    return CT_OK;
}

/* t = draw * scale + shift, draw uniform [0, 1) (normal false) or N(0, 1). */
static ct_status fill_random(const char *function, ct_tensor *t, bool normal, double scale, double shift)
{
    if (check_target(function, t, true) != CT_OK) return ct_last_error();
    ct_no_grad_push();
    ct_device device = t->storage->device;
    ct_tensor *draw = normal ? ct_randn(t->shape, t->ndim, t->dtype, device)
                             : ct_rand(t->shape, t->ndim, t->dtype, device);
    ct_tensor *scaled = ct_mul_scalar(draw, scale);
    ct_tensor *shifted = ct_add_scalar(scaled, shift);
    ct_status status = shifted ? ct_copy_(t, shifted) : ct_last_error();
    ct_release(shifted);
    ct_release(scaled);
    ct_release(draw);
    ct_no_grad_pop();
    return status;
}

ct_status ct_init_uniform_(ct_tensor *t, double a, double b)
{
    CT_API_ENTER;
    if (!(a <= b) || !isfinite(a) || !isfinite(b))
        return leave(ct_error(CT_ERR_INVALID_ARGUMENT, "ct_init_uniform_: the bounds are "
                                      "[%g, %g]; they must be finite with a <= b", a, b));
    return leave(fill_random("ct_init_uniform_", t, false, b - a, a));
}

ct_status ct_init_normal_(ct_tensor *t, double mean, double std)
{
    CT_API_ENTER;
    if (!(std >= 0.0) || !isfinite(mean) || isinf(std))
        return leave(ct_error(CT_ERR_INVALID_ARGUMENT, "ct_init_normal_: mean %g, std %g; std "
                                      "must be >= 0 and both finite", mean, std));
    return leave(fill_random("ct_init_normal_", t, true, std, mean));
}

ct_status ct_init_constant_(ct_tensor *t, double value)
{
    CT_API_ENTER;
    if (check_target("ct_init_constant_", t, false) != CT_OK) return leave(ct_last_error());
    ct_no_grad_push();
    ct_status status = ct_fill_(t, value);
    ct_no_grad_pop();
    return leave(status);
}

ct_status ct_init_zeros_(ct_tensor *t) { return ct_init_constant_(t, 0.0); }
ct_status ct_init_ones_(ct_tensor *t) { return ct_init_constant_(t, 1.0); }

ct_status ct_calculate_fan_in_and_fan_out(const ct_tensor *t, int64_t *fan_in, int64_t *fan_out)
{
    CT_API_ENTER;
    const char *function = "ct_calculate_fan_in_and_fan_out";
    if (!t) return leave((ct_null_argument(function, "tensor"), ct_last_error()));
    if (t->ndim < 2)
        return leave(ct_error(CT_ERR_SHAPE, "%s: tensor has %d dims; fan in and fan out "
                                      "cannot be computed for fewer than 2 dims", function, t->ndim));
    int64_t receptive = 1;
    for (int i = 2; i < t->ndim; i++) receptive *= t->shape[i];
    if (fan_in) *fan_in = t->shape[1] * receptive;
    if (fan_out) *fan_out = t->shape[0] * receptive;
    return leave(CT_OK);
}

ct_status ct_calculate_gain(const char *nonlinearity, double param, double *gain)
{
    CT_API_ENTER;
    const char *function = "ct_calculate_gain";
    if (!nonlinearity) return leave((ct_null_argument(function, "nonlinearity"), ct_last_error()));
    static const char *const linear[] = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                         "conv_transpose2d", "conv_transpose3d", "sigmoid"};
    double g = NAN;
    for (size_t i = 0; i < sizeof linear / sizeof linear[0]; i++)
        if (strcmp(nonlinearity, linear[i]) == 0) g = 1.0;
    if (strcmp(nonlinearity, "tanh") == 0) g = 5.0 / 3.0;
    else if (strcmp(nonlinearity, "relu") == 0) g = sqrt(2.0);
    else if (strcmp(nonlinearity, "selu") == 0) g = 3.0 / 4.0;
    else if (strcmp(nonlinearity, "leaky_relu") == 0) {
        double slope = isnan(param) ? 0.01 : param;
        g = sqrt(2.0 / (1.0 + slope * slope));
    }
    if (isnan(g))
        return leave(ct_error(CT_ERR_INVALID_ARGUMENT, "%s: unsupported nonlinearity \"%s\"; "
                                      "it must be linear, conv1d/2d/3d, conv_transpose1d/2d/3d, "
                                      "sigmoid, tanh, relu, leaky_relu or selu", function,
                                      nonlinearity));
    if (gain) *gain = g;
    return leave(CT_OK);
}

ct_status ct_init_xavier_uniform_(ct_tensor *t, double gain)
{
    CT_API_ENTER;
    int64_t in = 0, out = 0;
    if (ct_calculate_fan_in_and_fan_out(t, &in, &out) != CT_OK) return leave(ct_last_error());
    double bound = gain * sqrt(6.0 / (double)(in + out));
    return leave(fill_random("ct_init_xavier_uniform_", t, false, 2 * bound, -bound));
}

ct_status ct_init_xavier_normal_(ct_tensor *t, double gain)
{
    CT_API_ENTER;
    int64_t in = 0, out = 0;
    if (ct_calculate_fan_in_and_fan_out(t, &in, &out) != CT_OK) return leave(ct_last_error());
    return leave(fill_random("ct_init_xavier_normal_", t, true, gain * sqrt(2.0 / (double)(in + out)), 0.0));
}

/* gain / sqrt(fan) for kaiming_*: the fan of mode, the gain of nonlinearity with slope a. */
static ct_status kaiming_std(const char *function, const ct_tensor *t, double a, ct_fan_mode mode,
                             const char *nonlinearity, double *std)
{
    int64_t in = 0, out = 0;
    if (ct_calculate_fan_in_and_fan_out(t, &in, &out) != CT_OK) return ct_last_error();
    if (mode != CT_FAN_IN && mode != CT_FAN_OUT)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: mode is %d; it must be CT_FAN_IN or "
                        "CT_FAN_OUT", function, (int)mode);
    double gain = 0;
    if (ct_calculate_gain(nonlinearity ? nonlinearity : "leaky_relu", a, &gain) != CT_OK)
        return ct_last_error();
    int64_t fan = mode == CT_FAN_IN ? in : out;
    if (fan == 0) return ct_error(CT_ERR_SHAPE, "%s: a tensor with a zero-sized dim cannot be "
                                  "initialised (its fan is 0)", function);
    *std = gain / sqrt((double)fan);
    return CT_OK;
}

ct_status ct_init_kaiming_uniform_(ct_tensor *t, double a, ct_fan_mode mode, const char *nonlinearity)
{
    CT_API_ENTER;
    double std = 0;
    if (kaiming_std("ct_init_kaiming_uniform_", t, a, mode, nonlinearity, &std) != CT_OK)
        return leave(ct_last_error());
    double bound = sqrt(3.0) * std;
    return leave(fill_random("ct_init_kaiming_uniform_", t, false, 2 * bound, -bound));
}

ct_status ct_init_kaiming_normal_(ct_tensor *t, double a, ct_fan_mode mode, const char *nonlinearity)
{
    CT_API_ENTER;
    double std = 0;
    if (kaiming_std("ct_init_kaiming_normal_", t, a, mode, nonlinearity, &std) != CT_OK)
        return leave(ct_last_error());
    return leave(fill_random("ct_init_kaiming_normal_", t, true, std, 0.0));
}

/* Normal draws outside [a, b] drawn again (in place of PyTorch's inverse CDF, which needs an
 * erfinv the ops do not have): the same distribution. Each round reads one count back; after 64
 * rounds (an interval far in a tail) what remains is clamped. */
ct_status ct_init_trunc_normal_(ct_tensor *t, double mean, double std, double a, double b)
{
    CT_API_ENTER;
    const char *function = "ct_init_trunc_normal_";
    if (check_target(function, t, true) != CT_OK) return leave(ct_last_error());
    if (!(std > 0.0) || !(a < b) || !isfinite(mean) || isinf(std))
        return leave(ct_error(CT_ERR_INVALID_ARGUMENT, "%s: mean %g, std %g, [a, b] = [%g, "
                                      "%g]; std must be > 0, a < b and mean finite", function, mean,
                                      std, a, b));
    ct_no_grad_push();
    ct_device device = t->storage->device;
    /* in float32 at least: a 16-bit draw rounds near the bounds */
    ct_dtype dtype = t->dtype == CT_F64 ? CT_F64 : CT_F32;
    ct_tensor *draw = NULL;
    ct_status status = CT_OK;
    for (int round = 0; round < 64 && status == CT_OK; round++) {
        ct_tensor *fresh = ct_randn(t->shape, t->ndim, dtype, device);
        ct_tensor *scaled = ct_mul_scalar(fresh, std);
        ct_tensor *values = ct_add_scalar(scaled, mean);
        ct_release(fresh);
        ct_release(scaled);
        if (draw && values) {
            ct_tensor *low = ct_lt_scalar(draw, a), *high = ct_gt_scalar(draw, b);
            ct_tensor *outside = low && high ? ct_maximum(low, high) : NULL;
            ct_tensor *merged = outside ? ct_where(outside, values, draw) : NULL;
            ct_release(low);
            ct_release(high);
            ct_release(outside);
            ct_release(values);
            values = merged;
        }
        ct_release(draw);
        draw = values;
        if (!draw) {
            status = ct_last_error();
            break;
        }
        ct_tensor *low = ct_lt_scalar(draw, a), *high = ct_gt_scalar(draw, b);
        ct_tensor *outside = low && high ? ct_maximum(low, high) : NULL;
        ct_tensor *count = outside ? ct_sum(outside, NULL, 0, false) : NULL;
        double left = 0;
        status = count ? ct_item(count, &left) : ct_last_error();
        ct_release(count);
        ct_release(outside);
        ct_release(high);
        ct_release(low);
        if (status == CT_OK && left == 0) break;
    }
    ct_tensor *clamped = status == CT_OK ? ct_clamp(draw, a, b) : NULL;
    ct_tensor *cast = clamped ? ct_to_dtype(clamped, t->dtype) : NULL;
    if (status == CT_OK) status = cast ? ct_copy_(t, cast) : ct_last_error();
    ct_release(cast);
    ct_release(clamped);
    ct_release(draw);
    ct_no_grad_pop();
    return leave(status);
}
