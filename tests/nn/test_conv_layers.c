/* The Conv2d, MaxPool2d, AvgPool2d and BatchNorm1d/2d modules: parameters, buffers and their
 * initialisation, forward against the functional ops and plain C, running statistics in train
 * and eval mode, printing, bad arguments; on the cpu and on opencl:0. */
#include "nn/nn_test.h"

static ct_device devices[2];
static int device_count;

static int setup(void **state)
{
    (void)state;
    devices[0] = CT_DEVICE_CPU;
    device_count = 1;
    if (have_opencl()) devices[device_count++] = OPENCL0;
    return 0;
}

static void conv2d_parameters_and_forward(void **state)
{
    (void)state;
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        ct_manual_seed(12);
        ct_conv2d_options o = ct_conv2d_options_default();
        o.padding[0] = o.padding[1] = 1;
        o.groups = 2;
        ct_module *conv = ct_conv2d_module(4, 6, (int64_t[]){3, 3}, &o);
        assert_non_null(conv);
        assert_int_equal(ct_module_to(conv, devices[d]), CT_OK);
        ct_tensor *w = ct_module_parameter(conv, "weight"), *b = ct_module_parameter(conv, "bias");
        assert_int_equal(ct_tensor_ndim(w), 4);
        const int64_t want_shape[4] = {6, 2, 3, 3};
        for (int k = 0; k < 4; k++) assert_int_equal(ct_tensor_size(w, k), want_shape[k]);
        double wv[108];
        values_of(w, wv, 108);
        for (int i = 0; i < 108; i++) assert_true(fabs(wv[i]) <= 1.0 / sqrt(18.0)); /* fan_in 2*3*3 */
        ct_tensor *x = ct_randn((int64_t[]){2, 4, 5, 5}, 4, CT_F32, devices[d]);
        ct_tensor *y = ct_module_forward(conv, x);
        ct_tensor *want = ct_conv2d(x, w, b, o.stride, o.padding, o.dilation, o.groups);
        double got_v[300], want_v[300];
        values_of(y, got_v, 300);
        values_of(want, want_v, 300);
        assert_close_array(got_v, want_v, 300, 0, 0, "Conv2d");
        char *s = ct_module_to_string(conv);
        assert_string_equal(s, "Conv2d(4, 6, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=2)");
        free(s);
        ct_module_release(conv);
        ct_scope_pop();
    }
    ct_conv2d_options o = ct_conv2d_options_default();
    o.bias = false;
    ct_module *plain = ct_conv2d_module(1, 2, (int64_t[]){2, 2}, &o);
    assert_int_equal(ct_module_parameter_count(plain), 1);
    char *s = ct_module_to_string(plain);
    assert_string_equal(s, "Conv2d(1, 2, kernel_size=(2, 2), stride=(1, 1), bias=False)");
    free(s);
    ct_module_release(plain);
    o = ct_conv2d_options_default();
    o.groups = 3;
    assert_null(ct_conv2d_module(4, 6, (int64_t[]){3, 3}, &o));
    assert_error(CT_ERR_INVALID_ARGUMENT, "groups is 3; it must be positive and divide in_channels (4)");
    assert_null(ct_conv2d_module(0, 6, (int64_t[]){3, 3}, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "must be positive");
    assert_null(ct_conv2d_module(1, 6, NULL, NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "kernel_size");
}

static void pools_as_the_functional_ops(void **state)
{
    (void)state;
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        ct_manual_seed(13);
        ct_tensor *x = ct_randn((int64_t[]){1, 2, 6, 6}, 4, CT_F64, devices[d]);
        ct_module *max = ct_max_pool2d_module((int64_t[]){2, 2}, NULL, NULL);
        ct_module *avg = ct_avg_pool2d_module((int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, false);
        ct_tensor *a = ct_module_forward(max, x), *b = ct_max_pool2d(x, (int64_t[]){2, 2}, NULL, NULL);
        double av[18], bv[18];
        values_of(a, av, 18);
        values_of(b, bv, 18);
        assert_close_array(av, bv, 18, 0, 0, "MaxPool2d");
        a = ct_module_forward(avg, x);
        b = ct_avg_pool2d(x, (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}, false);
        values_of(a, av, 18);
        values_of(b, bv, 18);
        assert_close_array(av, bv, 18, 0, 0, "AvgPool2d");
        char *s = ct_module_to_string(max);
        assert_string_equal(s, "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
        free(s);
        s = ct_module_to_string(avg);
        assert_string_equal(s, "AvgPool2d(kernel_size=3, stride=2, padding=1)");
        free(s);
        ct_module_release(max);
        ct_module_release(avg);
        ct_scope_pop();
    }
    assert_null(ct_max_pool2d_module((int64_t[]){2, 2}, NULL, (int64_t[]){2, 0}));
    assert_error(CT_ERR_INVALID_ARGUMENT, "at most half the kernel size");
}

/* BatchNorm2d over [N=3, C=2, 2, 2]: batch statistics and running ones against plain C. */
static void batch_norm_running_statistics(void **state)
{
    (void)state;
    double x[24];
    for (int i = 0; i < 24; i++) x[i] = sin(0.9 * i) * 2.0 + (i % 8 < 4 ? 1.0 : -0.5);
    /* per channel: mean and variances over n, h, w */
    double mean[2] = {0}, var[2] = {0};
    for (int i = 0; i < 24; i++) mean[(i / 4) % 2] += x[i] / 12;
    for (int i = 0; i < 24; i++) var[(i / 4) % 2] += (x[i] - mean[(i / 4) % 2]) * (x[i] - mean[(i / 4) % 2]);
    for (int d = 0; d < device_count; d++) {
        ct_scope_push();
        ct_module *bn = ct_batch_norm2d(2, NULL);
        assert_int_equal(ct_module_to(bn, devices[d]), CT_OK);
        ct_named_tensors *buffers = ct_module_named_buffers(bn);
        assert_int_equal(buffers->count, 3);
        assert_string_equal(buffers->names[2], "num_batches_tracked");
        ct_named_tensors_free(buffers);
        ct_tensor *input = tensor_of(x, (int64_t[]){3, 2, 2, 2}, 4, CT_F64, devices[d]);
        assert_int_equal(ct_module_to_dtype(bn, CT_F64), CT_OK);
        for (int pass = 0; pass < 2; pass++) {
            ct_tensor *y = ct_module_forward(bn, input);
            if (!y) fail_msg("BatchNorm2d: %s", ct_last_error_message());
            double got[24], want[24];
            values_of(y, got, 24);
            for (int i = 0; i < 24; i++) {
                int c = (i / 4) % 2;
                want[i] = (x[i] - mean[c]) / sqrt(var[c] / 12 + 1e-5);
            }
            assert_close_array(got, want, 24, 1e-9, 1e-9, "BatchNorm2d, training");
        }
        double rm[2], rv[2], steps;
        values_by_module(bn, "running_mean", rm, 2);
        values_by_module(bn, "running_var", rv, 2);
        values_by_module(bn, "num_batches_tracked", &steps, 1);
        assert_true(steps == 2);
        double want_rm[2], want_rv[2];
        for (int c = 0; c < 2; c++) {
            want_rm[c] = 0.9 * (0.1 * mean[c]) + 0.1 * mean[c];
            want_rv[c] = 0.9 * (0.9 + 0.1 * var[c] / 11) + 0.1 * var[c] / 11;
        }
        assert_close_array(rm, want_rm, 2, 1e-9, 1e-12, "running_mean");
        assert_close_array(rv, want_rv, 2, 1e-9, 1e-12, "running_var");

        ct_module_eval(bn);
        ct_tensor *y = ct_module_forward(bn, input);
        double got[24], want[24];
        values_of(y, got, 24);
        for (int i = 0; i < 24; i++) {
            int c = (i / 4) % 2;
            want[i] = (x[i] - rm[c]) / sqrt(rv[c] + 1e-5);
        }
        assert_close_array(got, want, 24, 1e-9, 1e-9, "BatchNorm2d, eval");
        values_by_module(bn, "num_batches_tracked", &steps, 1);
        assert_true(steps == 2); /* eval does not count */
        char *s = ct_module_to_string(bn);
        assert_string_equal(s, "BatchNorm2d(2, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
        free(s);
        ct_tensor *flat = ct_flatten(input, 2, 3);
        assert_null(ct_module_forward(bn, flat));
        assert_error(CT_ERR_SHAPE, "BatchNorm2d: expected 4D input (got 3D input)");
        ct_module_release(bn);
        ct_scope_pop();
    }
}

static void batch_norm1d_and_options(void **state)
{
    (void)state;
    ct_scope_push();
    ct_batch_norm_options o = ct_batch_norm_options_default();
    o.affine = false;
    o.track_running_stats = false;
    ct_module *bn = ct_batch_norm1d(3, &o);
    assert_int_equal(ct_module_parameter_count(bn), 0);
    ct_named_tensors *buffers = ct_module_named_buffers(bn);
    assert_int_equal(buffers->count, 0);
    ct_named_tensors_free(buffers);
    ct_module_eval(bn); /* without running statistics, eval normalises with the batch's */
    double x[6] = {1, 2, 3, 3, 6, 9};
    ct_tensor *input = tensor_of(x, (int64_t[]){2, 3}, 2, CT_F64, CT_DEVICE_CPU);
    ct_tensor *y = ct_module_forward(bn, input);
    double got[6];
    values_of(y, got, 6);
    double want[6] = {-1, -1, -1, 1, 1, 1};
    for (int i = 0; i < 6; i++) want[i] *= sqrt(1.0 / (1.0 + 1e-5 / ((x[3 + i % 3] - x[i % 3]) * (x[3 + i % 3] - x[i % 3]) / 4)));
    assert_close_array(got, want, 6, 1e-9, 1e-9, "BatchNorm1d");
    ct_tensor *wrong = ct_ones((int64_t[]){2, 4}, 2, CT_F64, CT_DEVICE_CPU);
    assert_null(ct_module_forward(bn, wrong));
    assert_error(CT_ERR_SHAPE, "BatchNorm1d(3): the input has shape [2, 4]; its dim 1 (channels) must be 3");
    ct_module_release(bn);
    assert_null(ct_batch_norm2d(0, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "num_features is 0");
    o = ct_batch_norm_options_default();
    o.momentum = 2;
    assert_null(ct_batch_norm2d(4, &o));
    assert_error(CT_ERR_INVALID_ARGUMENT, "momentum 2 in [0, 1]");
    ct_scope_pop();
}

/* A small CNN (Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten, Linear) trained with Adam: the
 * same losses on the cpu and on opencl:0, and no device allocations once warm. */
enum { CNN_STEPS = 12, CNN_WARM = 4 };

static void train_cnn(ct_device device, double *losses)
{
    ct_manual_seed(31);
    ct_tensor *x_cpu = ct_randn((int64_t[]){8, 1, 8, 8}, 4, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y_cpu = ct_randint(0, 3, (int64_t[]){8}, 1, CT_I64, CT_DEVICE_CPU);
    ct_conv2d_options o = ct_conv2d_options_default();
    o.padding[0] = o.padding[1] = 1;
    ct_module *cnn = ct_sequential((ct_module *[]){ct_conv2d_module(1, 4, (int64_t[]){3, 3}, &o), ct_batch_norm2d(4, NULL),
                                                   ct_relu_module(), ct_max_pool2d_module((int64_t[]){2, 2}, NULL, NULL),
                                                   ct_flatten_module(1, -1), ct_linear(64, 3, true)}, 6);
    assert_non_null(cnn);
    assert_int_equal(ct_module_to(cnn, device), CT_OK);
    ct_tensor *x = ct_to(x_cpu, device), *y = ct_to(y_cpu, device);
    ct_adam_options a = ct_adam_options_default(0.01);
    ct_optimizer *opt = ct_optim_adam(cnn, &a);
    ct_memory_stats warm, now;
    for (int step = 0; step < CNN_STEPS; step++) {
        if (step == CNN_WARM) assert_int_equal(ct_memory_stats_get(device, &warm), CT_OK);
        ct_scope_push();
        ct_optimizer_zero_grad(opt);
        ct_tensor *loss = ct_cross_entropy(ct_module_forward(cnn, x), y, 0.0);
        if (!loss) fail_msg("step %d: %s", step, ct_last_error_message());
        assert_int_equal(ct_backward(loss), CT_OK);
        assert_int_equal(ct_optimizer_step(opt), CT_OK);
        losses[step] = value_of(loss);
        ct_scope_pop();
    }
    assert_int_equal(ct_memory_stats_get(device, &now), CT_OK);
    assert_int_equal(now.device_allocations, warm.device_allocations);
    assert_true(losses[CNN_STEPS - 1] < losses[0]);
    ct_optimizer_free(opt);
    ct_module_release(cnn);
    ct_release(x);
    ct_release(y);
    ct_release(x_cpu);
    ct_release(y_cpu);
}

static void a_cnn_trains_alike_on_every_device(void **state)
{
    (void)state;
    double on_cpu[CNN_STEPS], on_device[CNN_STEPS];
    train_cnn(CT_DEVICE_CPU, on_cpu);
    if (!have_opencl()) return;
    train_cnn(OPENCL0, on_device);
    assert_close_array(on_device, on_cpu, CNN_STEPS, 1e-4, 0, "CNN losses on opencl:0 against the cpu");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv2d_parameters_and_forward),
        cmocka_unit_test(pools_as_the_functional_ops),
        cmocka_unit_test(batch_norm_running_statistics),
        cmocka_unit_test(batch_norm1d_and_options),
        cmocka_unit_test(a_cnn_trains_alike_on_every_device),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
