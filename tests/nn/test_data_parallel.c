/* DataParallel on PoCL's two devices (POCL_DEVICES="pthread pthread"): two devices against one
 * with the same global batch (gradients, 20 training steps, BatchNorm in eval), one device against
 * the plain module (exactly), batches smaller than the device list and odd ones, the state dict's
 * `module.` prefix, grad mode and train/eval in the workers, replicas reused across steps, and the
 * errors. Choosing devices: test_data_parallel_devices.c. */
#include "nn/data_parallel_internal.h"
#include "nn/data_parallel_test.h"

static void gradients_on_two_devices_match_one_device(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    dp_check_gradients_match(dp_make_mlp, 8, false);
}

static void gradients_match_with_batch_norm_in_eval(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    dp_check_gradients_match(dp_make_warm_batch_norm_model, 8, true);
}

static void tied_weights_get_the_gradients_of_both_uses(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    dp_check_gradients_match(dp_make_tied_mlp, 8, false);
}

/* An input that requires grad gets its gradient back from both devices, on its own device. */
static void the_input_gets_its_gradient_back(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *one = dp_make_mlp(6, DEVICE0), *two = dp_make_mlp(6, DEVICE0);
    ct_module *dp_one = ct_data_parallel(one, dp_one_device, 1, DEVICE0);
    ct_module *dp_two = ct_data_parallel(two, dp_two_devices, 2, DEVICE0);
    ct_tensor *x, *target;
    dp_make_batch(2, 7, &x, &target);
    ct_tensor *x_one = ct_detach(x), *x_two = ct_detach(x);
    assert_int_equal(ct_requires_grad_(x_one, true), CT_OK);
    assert_int_equal(ct_requires_grad_(x_two, true), CT_OK);
    dp_step(dp_one, NULL, x_one, target);
    dp_step(dp_two, NULL, x_two, target);
    ct_tensor *g_one = ct_grad(x_one), *g_two = ct_grad(x_two);
    assert_non_null(g_one);
    assert_non_null(g_two);
    assert_true(ct_device_equal(ct_tensor_device(g_two), CT_DEVICE_CPU));
    double want[7 * DP_IN], got[7 * DP_IN];
    values_of(g_one, want, 7 * DP_IN);
    values_of(g_two, got, 7 * DP_IN);
    assert_close_to_scale(got, want, 7 * DP_IN, 1e-5, "input gradient");
    ct_release(g_one);
    ct_release(g_two);
    ct_release(x_one);
    ct_release(x_two);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp_one);
    ct_module_release(dp_two);
    ct_module_release(one);
    ct_module_release(two);
}

/* The replicas follow the wrapped module when it changes: converted to float64, or given a new
 * parameter after wrapping. */
static void replicas_follow_changes_of_the_module(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_mlp(2, DEVICE0);
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, DEVICE0);
    ct_tensor *x, *target;
    dp_make_batch(3, 6, &x, &target);
    dp_step(dp, NULL, x, target);
    assert_int_equal(ct_module_to_dtype(dp, CT_F64), CT_OK);
    ct_tensor *x64 = ct_to_dtype(x, CT_F64), *target64 = ct_to_dtype(target, CT_F64);
    ct_module_zero_grad(dp);
    dp_step(dp, NULL, x64, target64);
    assert_int_equal(ct_tensor_dtype(ct_dp_replica_tensor(dp, 1, "0.weight")), CT_F64);
    /* a parameter registered after wrapping is replicated from the next forward on */
    ct_tensor *extra = ct_ones((int64_t[]){2}, 1, CT_F64, DEVICE0);
    assert_int_equal(ct_module_register_parameter(model, "extra", extra), CT_OK);
    dp_step(dp, NULL, x64, target64);
    assert_non_null(ct_dp_replica_tensor(dp, 1, "extra"));
    assert_true(ct_device_equal(ct_tensor_device(ct_dp_replica_tensor(dp, 1, "extra")), DEVICE1));
    ct_release(extra);
    ct_release(x64);
    ct_release(target64);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp);
    ct_module_release(model);
}

static void twenty_sgd_steps_on_two_devices_match_one_device(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    dp_check_training_matches(dp_make_mlp, 20, false);
}

static void twenty_steps_match_with_batch_norm_in_eval(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    dp_check_training_matches(dp_make_warm_batch_norm_model, 20, true);
}

/* The forward's output and every gradient, as doubles. */
static void run_and_collect(ct_module *forward, ct_module *model, const ct_tensor *x, double *output,
                            double *grads, int64_t *grad_count)
{
    ct_scope_push();
    ct_module_zero_grad(model);
    ct_tensor *y = ct_module_forward(forward, x);
    if (!y) fail_msg("forward: %s", ct_last_error_message());
    values_of(y, output, ct_numel(y));
    ct_tensor *loss = ct_sum(ct_mul(y, y), NULL, 0, false);
    assert_int_equal(ct_backward(loss), CT_OK);
    *grad_count = module_parameter_values(model, true, grads, DP_MAX_VALUES);
    ct_scope_pop();
}

static void one_device_equals_the_plain_module_exactly(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *plain = dp_make_mlp(3, DEVICE0), *wrapped = dp_make_mlp(3, DEVICE0);
    ct_module *dp = ct_data_parallel(wrapped, dp_one_device, 1, DEVICE0);
    assert_non_null(dp);
    ct_tensor *x, *target;
    dp_make_batch(4, 9, &x, &target);
    double y_plain[9 * DP_OUT], y_dp[9 * DP_OUT], g_plain[DP_MAX_VALUES], g_dp[DP_MAX_VALUES];
    int64_t n_plain, n_dp;
    ct_tensor *x0 = ct_to(x, DEVICE0);
    run_and_collect(plain, plain, x0, y_plain, g_plain, &n_plain);
    run_and_collect(dp, wrapped, x, y_dp, g_dp, &n_dp);
    assert_int_equal(n_plain, n_dp);
    assert_memory_equal(y_plain, y_dp, sizeof y_plain);
    assert_memory_equal(g_plain, g_dp, sizeof(double) * (size_t)n_plain);
    ct_release(x0);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp);
    ct_module_release(plain);
    ct_module_release(wrapped);
}

/* rows rows over the two devices: device 0 and device 1 see rows0 and rows1 rows (-1: not
 * called), and the outputs and gradients are the plain module's on the whole batch. */
static void check_split(int64_t rows, int64_t rows0, int64_t rows1)
{
    ct_module *plain = dp_make_noting_mlp(8, DEVICE0), *wrapped = dp_make_noting_mlp(8, DEVICE0);
    ct_module *dp = ct_data_parallel(wrapped, dp_two_devices, 2, DEVICE0);
    assert_non_null(dp);
    ct_tensor *x, *target;
    dp_make_batch(9, rows, &x, &target);
    double y_plain[16 * DP_OUT], y_dp[16 * DP_OUT], g_plain[DP_MAX_VALUES], g_dp[DP_MAX_VALUES];
    int64_t n_plain, n_dp;
    ct_tensor *x0 = ct_to(x, DEVICE0);
    run_and_collect(plain, plain, x0, y_plain, g_plain, &n_plain);
    dp_reset_seen();
    run_and_collect(dp, wrapped, x, y_dp, g_dp, &n_dp);
    assert_int_equal(atomic_load(&dp_rows_seen[0]), rows0);
    assert_int_equal(atomic_load(&dp_rows_seen[1]), rows1);
    assert_int_equal(n_plain, n_dp);
    assert_close_to_scale(y_dp, y_plain, rows * DP_OUT, 1e-5, "output");
    assert_close_to_scale(g_dp, g_plain, n_plain, 1e-5, "gradient");
    ct_release(x0);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp);
    ct_module_release(plain);
    ct_module_release(wrapped);
}

static void an_odd_batch_splits_as_torch_chunk(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    check_split(5, 3, 2);
    check_split(16, 8, 8);
}

static void a_batch_smaller_than_the_device_list_uses_fewer_replicas(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    check_split(1, 1, -1);
}

static void every_device_of_the_type_by_default(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_noting_mlp(2, DEVICE0);
    ct_module *dp = ct_data_parallel(model, NULL, 0, (ct_device){CT_OPENCL, -1});
    assert_non_null(dp);
    ct_tensor *x = ct_randn((int64_t[]){16, DP_IN}, 2, CT_F32, CT_DEVICE_CPU);
    dp_reset_seen();
    ct_tensor *y = ct_module_forward(dp, x);
    assert_non_null(y);
    /* torch.chunk over however many devices there are: chunks of ceil(16 / n) rows, the last
     * one shorter (6, 6, 4 on three devices), and a device past the rows gets no replica */
    int n = ct_device_count(CT_OPENCL);
    assert_true(n <= DP_MAX_SEEN);
    int64_t chunk = (16 + n - 1) / n;
    for (int d = 0; d < n; d++) {
        int64_t rows = 16 - d * chunk < chunk ? 16 - d * chunk : chunk;
        if (rows <= 0) rows = -1;
        if (atomic_load(&dp_rows_seen[d]) != rows)
            fail_msg("opencl:%d of %d saw %lld rows, expected %lld", d, n,
                     (long long)atomic_load(&dp_rows_seen[d]), (long long)rows);
    }
    assert_true(ct_device_equal(ct_tensor_device(y), DEVICE0)); /* the output device: devices[0] */
    ct_release(y);
    ct_release(x);
    ct_module_release(dp);
    ct_module_release(model);
}

static void the_output_device_may_be_the_cpu(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_mlp(2, DEVICE0);
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, CT_DEVICE_CPU);
    assert_non_null(dp);
    ct_tensor *x, *target;
    dp_make_batch(1, 6, &x, &target);
    ct_tensor *y = ct_module_forward(dp, x);
    assert_non_null(y);
    assert_true(ct_device_equal(ct_tensor_device(y), CT_DEVICE_CPU));
    assert_int_equal(ct_tensor_size(y, 0), 6);
    ct_tensor *loss = ct_mse_loss(y, target);
    assert_int_equal(ct_backward(loss), CT_OK);
    ct_tensor *g = ct_module_parameter(model, "0.weight");
    ct_tensor *grad = ct_grad(g);
    assert_non_null(grad);
    assert_true(ct_device_equal(ct_tensor_device(grad), DEVICE0));
    ct_release(grad);
    ct_release(g);
    ct_release(loss);
    ct_release(y);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp);
    ct_module_release(model);
}

static ct_tensor *summing_forward(ct_module *self, const ct_tensor *x)
{
    ct_tensor *y = ct_module_forward(ct_module_child(self, "body"), x);
    ct_tensor *total = ct_sum(y, NULL, 0, false);
    ct_release(y);
    return total;
}

/* A replica's 0-d output counts as one row of the gathered output (PyTorch's gather does so). */
static void scalar_outputs_are_gathered_as_one_row_each(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *body = dp_make_mlp(2, DEVICE0);
    ct_module *model = ct_module_create("Summing", summing_forward, NULL, NULL);
    assert_int_equal(ct_module_register_module(model, "body", body), CT_OK);
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, DEVICE0);
    ct_tensor *x, *target;
    dp_make_batch(5, 5, &x, &target);
    ct_tensor *y = ct_module_forward(dp, x);
    assert_non_null(y);
    assert_int_equal(ct_tensor_ndim(y), 1);
    assert_int_equal(ct_tensor_size(y, 0), 2);
    /* each value is the sum of the plain module's outputs on that replica's rows (3, then 2) */
    ct_tensor *x0 = ct_to(x, DEVICE0);
    ct_tensor *whole = ct_module_forward(body, x0);
    double got[2], rows[5 * DP_OUT], want[2] = {0, 0};
    values_of(y, got, 2);
    values_of(whole, rows, 5 * DP_OUT);
    for (int i = 0; i < 5 * DP_OUT; i++) want[i < 3 * DP_OUT ? 0 : 1] += rows[i];
    assert_close_to_scale(got, want, 2, 1e-5, "sums");
    ct_release(whole);
    ct_release(x0);
    ct_release(y);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp);
    ct_module_release(model);
    ct_module_release(body);
}

static void the_workers_take_the_callers_grad_mode(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_mlp(2, DEVICE0);
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, DEVICE0);
    ct_tensor *x = ct_randn((int64_t[]){4, DP_IN}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_module_forward(dp, x);
    assert_non_null(y);
    assert_string_equal(ct_grad_fn_name(y), "GatherBackward");
    ct_release(y);
    ct_no_grad_push();
    y = ct_module_forward(dp, x);
    ct_no_grad_pop();
    assert_non_null(y);
    assert_false(ct_requires_grad(y));
    assert_null(ct_grad_fn_name(y));
    ct_release(y);
    ct_release(x);
    ct_module_release(dp);
    ct_module_release(model);
}

/* Training-mode BatchNorm: the running statistics kept are those of devices[0]'s chunk. */
static void batch_norm_keeps_the_statistics_of_devices0(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *reference = dp_make_batch_norm_model(4, DEVICE0), *wrapped = dp_make_batch_norm_model(4, DEVICE0);
    ct_module *dp = ct_data_parallel(wrapped, dp_two_devices, 2, DEVICE0);
    ct_tensor *x, *target;
    dp_make_batch(6, 10, &x, &target);
    ct_tensor *first_rows = ct_narrow(x, 0, 0, 5), *first_rows0 = ct_to(first_rows, DEVICE0);
    ct_tensor *y_ref = ct_module_forward(reference, first_rows0), *y = ct_module_forward(dp, x);
    assert_non_null(y_ref);
    assert_non_null(y);
    double want[DP_HIDDEN], got[DP_HIDDEN];
    values_by_module(reference, "1.running_mean", want, DP_HIDDEN);
    values_by_module(wrapped, "1.running_mean", got, DP_HIDDEN);
    assert_close_to_scale(got, want, DP_HIDDEN, 1e-6, "running_mean");
    values_by_module(reference, "1.running_var", want, DP_HIDDEN);
    values_by_module(wrapped, "1.running_var", got, DP_HIDDEN);
    assert_close_to_scale(got, want, DP_HIDDEN, 1e-6, "running_var");
    values_by_module(wrapped, "1.num_batches_tracked", got, 1);
    assert_true(got[0] == 1.0);
    ct_release(y_ref);
    ct_release(y);
    ct_release(first_rows);
    ct_release(first_rows0);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp);
    ct_module_release(reference);
    ct_module_release(wrapped);
}

/* eval on the wrapper reaches the replicas: BatchNorm then uses the running statistics on every
 * device, and the outputs are the plain module's in eval mode. */
static void eval_mode_reaches_the_replicas(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *plain = dp_make_warm_batch_norm_model(4, DEVICE0), *wrapped = dp_make_warm_batch_norm_model(4, DEVICE0);
    ct_module *dp = ct_data_parallel(wrapped, dp_two_devices, 2, DEVICE0);
    ct_module_eval(plain);
    ct_module_eval(dp);
    assert_false(ct_module_is_training(wrapped));
    ct_tensor *x, *target;
    dp_make_batch(6, 8, &x, &target);
    ct_tensor *x0 = ct_to(x, DEVICE0);
    ct_tensor *y_plain = ct_module_forward(plain, x0), *y = ct_module_forward(dp, x);
    double want[8 * DP_OUT], got[8 * DP_OUT];
    values_of(y_plain, want, 8 * DP_OUT);
    values_of(y, got, 8 * DP_OUT);
    assert_close_to_scale(got, want, 8 * DP_OUT, 1e-5, "eval output");
    ct_module_train(dp, true);
    assert_true(ct_module_is_training(wrapped));
    ct_release(y_plain);
    ct_release(y);
    ct_release(x0);
    ct_release(x);
    ct_release(target);
    ct_module_release(dp);
    ct_module_release(plain);
    ct_module_release(wrapped);
}

/* The replica's tensors are allocated once: the same store, refreshed, at every step, and no
 * device allocation once warm. */
static void replicas_are_reused_across_steps(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_batch_norm_model(2, DEVICE0);
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, DEVICE0);
    ct_optimizer *optimizer = dp_sgd(dp);
    ct_tensor *x, *target;
    dp_make_batch(3, 8, &x, &target);
    dp_step(dp, optimizer, x, target);
    const ct_tensor *weight = ct_dp_replica_tensor(dp, 1, "0.weight");
    const ct_tensor *mean = ct_dp_replica_tensor(dp, 1, "1.running_mean");
    assert_non_null(weight);
    assert_non_null(mean);
    assert_true(ct_device_equal(ct_tensor_device(weight), DEVICE1));
    dp_step(dp, optimizer, x, target);
    ct_memory_stats warm[2], now[2];
    for (int d = 0; d < 2; d++) assert_int_equal(ct_memory_stats_get(dp_two_devices[d], &warm[d]), CT_OK);
    for (int step = 0; step < 5; step++) dp_step(dp, optimizer, x, target);
    for (int d = 0; d < 2; d++) {
        assert_int_equal(ct_memory_stats_get(dp_two_devices[d], &now[d]), CT_OK);
        assert_int_equal(now[d].device_allocations, warm[d].device_allocations);
    }
    assert_ptr_equal(ct_dp_replica_tensor(dp, 1, "0.weight"), weight);
    assert_ptr_equal(ct_dp_replica_tensor(dp, 1, "1.running_mean"), mean);
    /* and it holds the wrapped module's current values (as of the last forward's broadcast) */
    ct_no_grad_push();
    ct_tensor *y = ct_module_forward(dp, x);
    ct_no_grad_pop();
    double want[DP_HIDDEN * DP_IN], got[DP_HIDDEN * DP_IN];
    values_by_module(model, "0.weight", want, DP_HIDDEN * DP_IN);
    values_of(weight, got, DP_HIDDEN * DP_IN);
    assert_memory_equal(got, want, sizeof want);
    ct_release(y);
    ct_release(x);
    ct_release(target);
    ct_optimizer_free(optimizer);
    ct_module_release(dp);
    ct_module_release(model);
}

static void the_state_dict_has_the_module_prefix(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_batch_norm_model(2, DEVICE0);
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, DEVICE0);
    char *printed = ct_module_to_string(dp);
    assert_non_null(printed);
    assert_int_equal(strncmp(printed, "DataParallel(\n  (module): Sequential(\n", 38), 0);
    free(printed);
    ct_state_dict *sd = ct_module_state_dict(dp, NULL);
    assert_non_null(sd);
    assert_int_equal(ct_state_dict_count(sd), 9); /* 2 Linears x 2, BatchNorm's 2 + 3 */
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++)
        assert_int_equal(strncmp(ct_state_dict_name_at(sd, i), "module.", 7), 0);
    assert_true(ct_state_dict_contains(sd, "module.1.running_var"));
    /* it does not load into the plain module as it is; it does once the prefix is stripped */
    ct_module *plain = dp_make_batch_norm_model(9, CT_DEVICE_CPU);
    assert_int_equal(ct_module_load_state_dict(plain, sd, true, NULL), CT_ERR_INVALID_ARGUMENT);
    ct_clear_error();
    assert_int_equal(ct_state_dict_strip_prefix(sd, "module."), CT_OK);
    assert_int_equal(ct_module_load_state_dict(plain, sd, true, NULL), CT_OK);
    double want[DP_HIDDEN * DP_IN], got[DP_HIDDEN * DP_IN];
    values_by_module(model, "0.weight", want, DP_HIDDEN * DP_IN);
    values_by_module(plain, "0.weight", got, DP_HIDDEN * DP_IN);
    assert_memory_equal(got, want, sizeof want);
    ct_state_dict_free(sd);
    ct_module_release(plain);
    ct_module_release(dp);
    ct_module_release(model);
}

static void parameters_off_devices0_are_an_error_naming_the_device(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_mlp(2, CT_DEVICE_CPU);
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, DEVICE0);
    assert_non_null(dp); /* wrapping first and moving after is allowed, as in PyTorch */
    ct_tensor *x = ct_randn((int64_t[]){4, DP_IN}, 2, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_module_forward(dp, x));
    assert_int_equal(ct_last_error(), CT_ERR_DEVICE);
    assert_non_null(strstr(ct_last_error_message(), "opencl:0"));
    assert_error(CT_ERR_DEVICE, "'0.weight' is on cpu");
    assert_int_equal(ct_module_to(dp, DEVICE0), CT_OK);
    ct_tensor *y = ct_module_forward(dp, x);
    assert_non_null(y);
    ct_release(y);
    /* on the second device is no better */
    assert_int_equal(ct_module_to(dp, DEVICE1), CT_OK);
    assert_null(ct_module_forward(dp, x));
    assert_error(CT_ERR_DEVICE, "on device opencl:0 (devices[0]) but '0.weight' is on opencl:1");
    ct_release(x);
    ct_module_release(dp);
    ct_module_release(model);
}

static void bad_device_lists_are_errors(void **state)
{
    (void)state;
    NEED_TWO_DEVICES();
    ct_module *model = dp_make_mlp(2, DEVICE0);
    assert_null(ct_data_parallel(NULL, dp_two_devices, 2, DEVICE0));
    assert_error(CT_ERR_NULL_ARGUMENT, "module");
    assert_null(ct_data_parallel(model, (ct_device[]){{CT_OPENCL, 0}, {CT_OPENCL, 5}}, 2, DEVICE0));
    assert_error(CT_ERR_DEVICE, "devices[1]");
    assert_null(ct_data_parallel(model, (ct_device[]){{CT_OPENCL, 0}, CT_DEVICE_CPU}, 2, DEVICE0));
    assert_error(CT_ERR_DEVICE, "devices[0] is opencl:0 and devices[1] is cpu");
    assert_null(ct_data_parallel(model, (ct_device[]){{CT_OPENCL, 1}, {CT_OPENCL, 1}}, 2, DEVICE0));
    assert_error(CT_ERR_INVALID_ARGUMENT, "opencl:1 is listed twice");
    assert_null(ct_data_parallel(model, NULL, 2, DEVICE0));
    assert_error(CT_ERR_NULL_ARGUMENT, "devices");
    assert_null(ct_data_parallel(model, dp_two_devices, -1, DEVICE0));
    assert_error(CT_ERR_INVALID_ARGUMENT, "count is -1");
    assert_null(ct_data_parallel(model, dp_two_devices, 2, (ct_device){CT_OPENCL, 9}));
    assert_error(CT_ERR_DEVICE, "output_device");
    /* an empty list: no devices given and none of the type here */
    if (ct_device_count(CT_CUDA) == 0) {
        assert_null(ct_data_parallel(model, NULL, 0, (ct_device){CT_CUDA, -1}));
        assert_error(CT_ERR_UNAVAILABLE, "the device list is empty");
    }
    /* a 0-d input has no batch to scatter */
    ct_module *dp = ct_data_parallel(model, dp_two_devices, 2, DEVICE0);
    ct_tensor *scalar = ct_ones(NULL, 0, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_module_forward(dp, scalar));
    assert_error(CT_ERR_SHAPE, "0-d");
    /* a replica's error names the replica and its device */
    ct_tensor *wrong = ct_ones((int64_t[]){4, DP_IN + 1}, 2, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_module_forward(dp, wrong));
    assert_error(CT_ERR_SHAPE, "DataParallel: replica 0 on opencl:0: Linear(in_features=6");
    ct_release(wrong);
    ct_release(scalar);
    ct_module_release(dp);
    ct_module_release(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradients_on_two_devices_match_one_device),
        cmocka_unit_test(gradients_match_with_batch_norm_in_eval),
        cmocka_unit_test(tied_weights_get_the_gradients_of_both_uses),
        cmocka_unit_test(the_input_gets_its_gradient_back),
        cmocka_unit_test(replicas_follow_changes_of_the_module),
        cmocka_unit_test(twenty_sgd_steps_on_two_devices_match_one_device),
        cmocka_unit_test(twenty_steps_match_with_batch_norm_in_eval),
        cmocka_unit_test(one_device_equals_the_plain_module_exactly),
        cmocka_unit_test(an_odd_batch_splits_as_torch_chunk),
        cmocka_unit_test(a_batch_smaller_than_the_device_list_uses_fewer_replicas),
        cmocka_unit_test(every_device_of_the_type_by_default),
        cmocka_unit_test(the_output_device_may_be_the_cpu),
        cmocka_unit_test(scalar_outputs_are_gathered_as_one_row_each),
        cmocka_unit_test(the_workers_take_the_callers_grad_mode),
        cmocka_unit_test(batch_norm_keeps_the_statistics_of_devices0),
        cmocka_unit_test(eval_mode_reaches_the_replicas),
        cmocka_unit_test(replicas_are_reused_across_steps),
        cmocka_unit_test(the_state_dict_has_the_module_prefix),
        cmocka_unit_test(parameters_off_devices0_are_an_error_naming_the_device),
        cmocka_unit_test(bad_device_lists_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
