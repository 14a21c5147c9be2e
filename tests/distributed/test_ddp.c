/* DistributedDataParallel: W processes with batch B/W each train as one process with batch B
 * (gradients after a step, parameters after 20 SGD steps, on cpu and opencl, one bucket or many);
 * gradient accumulation under no_sync; parameters without a gradient; wrapping checks that every
 * rank has the same model. Runs under mpirun with 2 ranks and with 1. */
#include "dist_test.h"

static int rank_, world_;

enum { FEATURES = 8, HIDDEN = 16, OUTPUTS = 4, BATCH = 8, STEPS = 20 };

/* The same initial weights on every rank only when seed is; DDP must copy rank 0's. */
static ct_module *make_model(uint64_t seed)
{
    ct_manual_seed(seed);
    ct_module *m = ct_sequential((ct_module *[]){ct_linear(FEATURES, HIDDEN, true), ct_tanh_module(),
                                                 ct_linear(HIDDEN, OUTPUTS, true)}, 3);
    assert_non_null(m);
    return m;
}

/* Step s's global batch (the same on every rank) and this rank's rows of it. */
typedef struct batches {
    ct_tensor *x, *y; /* [STEPS, BATCH, ...] on the cpu */
} batches;

static batches make_batches(void)
{
    ct_manual_seed(7);
    int64_t xs[3] = {STEPS, BATCH, FEATURES}, ys[3] = {STEPS, BATCH, OUTPUTS};
    batches b = {ct_randn(xs, 3, CT_F32, CT_DEVICE_CPU), ct_randn(ys, 3, CT_F32, CT_DEVICE_CPU)};
    assert_non_null(b.x);
    assert_non_null(b.y);
    return b;
}

/* rows [first, first + count) of step s, on device */
static ct_tensor *rows(const ct_tensor *all, int step, int64_t first, int64_t count, ct_device device)
{
    ct_tensor *s = ct_select(all, 0, step);
    ct_tensor *part = ct_narrow(s, 0, first, count);
    ct_tensor *out = ct_to(part, device);
    assert_non_null(out);
    ct_release(s);
    ct_release(part);
    return out;
}

static ct_status forward_backward(ct_module *m, const batches *b, int step, int64_t first, int64_t count,
                                  ct_device device)
{
    ct_scope_push();
    ct_tensor *x = rows(b->x, step, first, count, device), *y = rows(b->y, step, first, count, device);
    ct_status status = ct_backward(ct_mse_loss(ct_module_forward(m, x), y));
    ct_scope_pop();
    return status;
}

/* max |a - b| / max |b| over the tensors' elements; below 1e-3, relative to 1e-3 (the bias of a
 * layer before BatchNorm has a gradient of 0 but for rounding, ~1e-9, which no relative figure
 * measures). */
static double relative_difference(const ct_tensor *a, const ct_tensor *b)
{
    int64_t n = ct_numel(b);
    double *x = dist_test_read(a), *y = dist_test_read(b), diff = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs(x[i] - y[i]));
        scale = fmax(scale, fabs(y[i]));
    }
    free(x);
    free(y);
    return diff / fmax(scale, 1e-3);
}

/* Every parameter (or its gradient) of a within tolerance of b's, relative to b's largest. */
static void assert_same_tensors(const ct_module *a, const ct_module *b, bool grads, double tolerance, const char *what)
{
    ct_named_tensors *pa = ct_module_named_parameters(a), *pb = ct_module_named_parameters(b);
    assert_int_equal(pa->count, pb->count);
    for (int64_t i = 0; i < pa->count; i++) {
        ct_tensor *ta = grads ? ct_grad(pa->tensors[i]) : ct_retain(pa->tensors[i]);
        ct_tensor *tb = grads ? ct_grad(pb->tensors[i]) : ct_retain(pb->tensors[i]);
        if (!ta || !tb) fail_msg("%s: '%s' has no gradient", what, pb->names[i]);
        double d = relative_difference(ta, tb);
        if (!(d <= tolerance))
            fail_msg("%s: '%s' differs by %.3g relative (rank %d of %d), more than %.1g", what, pb->names[i], d,
                     rank_, world_, tolerance);
        ct_release(ta);
        ct_release(tb);
    }
    ct_named_tensors_free(pa);
    ct_named_tensors_free(pb);
}

/* `steps` SGD steps of ddp (wrapping model) on this rank's BATCH / world rows, beside reference
 * on all BATCH rows: the gradients after the first step and the parameters after the last are the
 * same within 1e-5. */
static void train_beside_reference(ct_module *ddp, ct_module *model, ct_module *reference, const batches *b,
                                   int steps, const ct_sgd_options *sgd, ct_device device, const char *what)
{
    int64_t local = BATCH / world_, first = rank_ * local;
    char label[128];
    ct_optimizer *opt = ct_optim_sgd(ddp, sgd), *ref_opt = ct_optim_sgd(reference, sgd);
    assert_non_null(opt);
    assert_non_null(ref_opt);
    for (int step = 0; step < steps; step++) {
        ct_optimizer_zero_grad(opt);
        ct_optimizer_zero_grad(ref_opt);
        assert_int_equal(forward_backward(ddp, b, step, first, local, device), CT_OK);
        assert_int_equal(forward_backward(reference, b, step, 0, BATCH, device), CT_OK);
        if (step == 0) {
            snprintf(label, sizeof label, "%s: gradients after one step", what);
            assert_same_tensors(model, reference, true, 1e-5, label);
        }
        assert_int_equal(ct_optimizer_step(opt), CT_OK);
        assert_int_equal(ct_optimizer_step(ref_opt), CT_OK);
    }
    snprintf(label, sizeof label, "%s: parameters after %d steps", what, steps);
    assert_same_tensors(model, reference, false, 1e-5, label);
    ct_optimizer_free(opt);
    ct_optimizer_free(ref_opt);
}

/* DDP over the world with BATCH / world rows per rank against one process with BATCH rows. */
static void train_and_compare(ct_device device, double bucket_cap_mb, bool move_after_wrapping, bool overlap)
{
    batches b = make_batches();
    ct_module *reference = make_model(100);
    ct_module *model = make_model(100 + (uint64_t)rank_); /* rank 0's weights must win */
    assert_int_equal(ct_module_to(reference, device), CT_OK);
    assert_int_equal(ct_module_to(model, move_after_wrapping ? CT_DEVICE_CPU : device), CT_OK);
    ct_ddp_options options = ct_ddp_options_default();
    options.bucket_cap_mb = bucket_cap_mb;
    options.all_reduce_start = overlap ? CT_DDP_START_DURING_BACKWARD : CT_DDP_START_AFTER_BACKWARD;
    ct_module *ddp = ct_distributed_data_parallel(model, &options);
    assert_non_null(ddp);
    if (move_after_wrapping) assert_int_equal(ct_module_to(ddp, device), CT_OK);
    assert_same_tensors(model, reference, false, 0, "parameters after wrapping");
    ct_sgd_options sgd = ct_sgd_options_default(0.05);
    sgd.momentum = 0.9;
    train_beside_reference(ddp, model, reference, &b, STEPS, &sgd, device, "DDP");
    ct_ddp_stats stats;
    assert_int_equal(ct_ddp_get_stats(ddp, &stats), CT_OK);
    assert_int_equal(stats.syncs, STEPS);
    assert_int_equal(stats.parameter_count, 4);
    assert_int_equal(stats.gradient_bytes, 4 * (FEATURES * HIDDEN + HIDDEN + HIDDEN * OUTPUTS + OUTPUTS));
    /* 1 bucket at 25 MiB; 4 when each parameter fills one */
    assert_int_equal(stats.bucket_count, bucket_cap_mb >= 1 ? 1 : 4);
    ct_module_release(ddp);
    ct_module_release(model);
    ct_module_release(reference);
    ct_release(b.x);
    ct_release(b.y);
}

static void ddp_trains_as_one_process_with_the_whole_batch(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int count = dist_test_devices(devices);
    for (int d = 0; d < count; d++) {
        train_and_compare(devices[d], 25.0, false, true);
        train_and_compare(devices[d], 1e-6, d > 0, true); /* a bucket per parameter; moved after wrapping */
        train_and_compare(devices[d], 1e-6, false, false); /* every bucket started when backward ends */
    }
}

static void no_sync_accumulates_locally_then_averages_everything(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int count = dist_test_devices(devices);
    ct_device device = devices[count - 1];
    batches b = make_batches();
    int64_t local = BATCH / world_, first = rank_ * local;
    ct_module *reference = make_model(100), *alone = make_model(100), *model = make_model(100);
    ct_module_to(reference, device);
    ct_module_to(alone, device);
    ct_module_to(model, device);
    ct_module *ddp = ct_distributed_data_parallel(model, NULL);
    assert_non_null(ddp);
    /* Micro-batch 0 without communication: the gradient is this rank's own. */
    assert_int_equal(ct_ddp_no_sync_push(ddp), CT_OK);
    assert_int_equal(forward_backward(ddp, &b, 0, first, local, device), CT_OK);
    assert_int_equal(ct_ddp_no_sync_pop(ddp), CT_OK);
    assert_int_equal(forward_backward(alone, &b, 0, first, local, device), CT_OK);
    assert_same_tensors(model, alone, true, 1e-6, "a gradient under no_sync");
    ct_ddp_stats stats;
    ct_ddp_get_stats(ddp, &stats);
    assert_int_equal(stats.syncs, 0);
    /* Micro-batch 1 synchronised: the average of the sums, the whole batches' sum. */
    assert_int_equal(forward_backward(ddp, &b, 1, first, local, device), CT_OK);
    assert_int_equal(forward_backward(reference, &b, 0, 0, BATCH, device), CT_OK);
    assert_int_equal(forward_backward(reference, &b, 1, 0, BATCH, device), CT_OK);
    assert_same_tensors(model, reference, true, 1e-5, "gradients accumulated over no_sync");
    ct_ddp_get_stats(ddp, &stats);
    assert_int_equal(stats.syncs, 1);
    ct_module_release(ddp);
    ct_module_release(model);
    ct_module_release(alone);
    ct_module_release(reference);
    ct_release(b.x);
    ct_release(b.y);
}

/* With SyncBatchNorm inside, backward makes its own all-reduces while the buckets' are in flight:
 * the ranks still train as one process with BatchNorm over the whole batch. In float64: the
 * gradient of the bias before BatchNorm is 0 but for rounding, which float32 makes ~1e-8. */
static void ddp_with_sync_batch_norm_trains_as_one_process(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    int count = dist_test_devices(devices);
    ct_device device = devices[count - 1];
    batches b = make_batches();
    ct_module *models[2];
    for (int i = 0; i < 2; i++) {
        ct_manual_seed(100);
        models[i] = ct_sequential((ct_module *[]){ct_linear(FEATURES, HIDDEN, true), ct_batch_norm1d(HIDDEN, NULL),
                                                  ct_tanh_module(), ct_linear(HIDDEN, OUTPUTS, true)}, 4);
        assert_int_equal(ct_module_to(models[i], device), CT_OK);
        assert_int_equal(ct_module_to_dtype(models[i], CT_F64), CT_OK);
    }
    ct_tensor *x64 = ct_to_dtype(b.x, CT_F64), *y64 = ct_to_dtype(b.y, CT_F64);
    ct_release(b.x);
    ct_release(b.y);
    b.x = x64;
    b.y = y64;
    ct_module *reference = models[0], *model = models[1];
    int converted = 0;
    assert_int_equal(ct_convert_sync_batch_norm(model, &converted), CT_OK);
    assert_int_equal(converted, 1);
    ct_ddp_options options = ct_ddp_options_default();
    options.bucket_cap_mb = 1e-6; /* a bucket per parameter: several in flight during backward */
    ct_module *ddp = ct_distributed_data_parallel(model, &options);
    assert_non_null(ddp);
    ct_sgd_options sgd = ct_sgd_options_default(0.05);
    train_beside_reference(ddp, model, reference, &b, 5, &sgd, device, "DDP with SyncBatchNorm");
    ct_tensor *mean = ct_module_buffer(model, "1.running_mean"), *ref_mean = ct_module_buffer(reference, "1.running_mean");
    assert_true(relative_difference(mean, ref_mean) <= 1e-5);
    ct_release(mean);
    ct_release(ref_mean);
    ct_module_release(ddp);
    ct_module_release(model);
    ct_module_release(reference);
    ct_release(b.x);
    ct_release(b.y);
}

/* A model of two Linear children, "a" and "b"; its forward uses b only when *use_b. */
static bool use_b_;

static ct_tensor *two_branch_forward(ct_module *self, const ct_tensor *x)
{
    ct_tensor *out = ct_module_forward(ct_module_child(self, "a"), x);
    if (!use_b_) return out;
    ct_tensor *branch = ct_module_forward(ct_module_child(self, "b"), x);
    ct_tensor *sum = ct_add(out, branch);
    ct_release(out);
    ct_release(branch);
    return sum;
}

static ct_module *two_branch_model(void)
{
    ct_manual_seed(3);
    ct_module *m = ct_module_create("TwoBranches", two_branch_forward, NULL, NULL);
    ct_module *a = ct_linear(FEATURES, OUTPUTS, true), *b = ct_linear(FEATURES, OUTPUTS, false);
    ct_module_register_module(m, "a", a);
    ct_module_register_module(m, "b", b);
    ct_module_release(a);
    ct_module_release(b);
    return m;
}

static void a_parameter_without_a_gradient_is_named_unless_allowed(void **state)
{
    (void)state;
    batches b = make_batches();
    int64_t local = BATCH / world_, first = rank_ * local;
    ct_module *model = two_branch_model();
    ct_module *ddp = ct_distributed_data_parallel(model, NULL);
    use_b_ = false;
    assert_int_equal(forward_backward(ddp, &b, 0, first, local, CT_DEVICE_CPU), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "'b.weight'");
    /* The ranks stayed in step: a collective still matches. */
    assert_int_equal(ct_dist_barrier(), CT_OK);
    ct_module_release(ddp);
    ct_module_zero_grad(model);

    ct_ddp_options options = ct_ddp_options_default();
    options.find_unused_parameters = true;
    ddp = ct_distributed_data_parallel(model, &options);
    assert_non_null(ddp);
    assert_int_equal(forward_backward(ddp, &b, 0, first, local, CT_DEVICE_CPU), CT_OK);
    ct_tensor *weight = ct_module_parameter(model, "b.weight");
    assert_null(ct_grad(weight)); /* no rank used it: no gradient, as before */
    ct_module_zero_grad(model);
    /* Used on rank 0 only: every rank gets rank 0's gradient over the world size. */
    use_b_ = rank_ == 0;
    assert_int_equal(forward_backward(ddp, &b, 0, first, local, CT_DEVICE_CPU), CT_OK);
    ct_tensor *grad = ct_grad(weight);
    assert_non_null(grad);
    ct_tensor *copy = ct_clone(grad);
    assert_int_equal(ct_dist_broadcast(copy, 0), CT_OK); /* rank 0's value, checked by rank 1 */
    assert_true(relative_difference(grad, copy) <= 1e-7);
    ct_module *alone = two_branch_model();
    use_b_ = true;
    assert_int_equal(forward_backward(alone, &b, 0, 0, local, CT_DEVICE_CPU), CT_OK); /* rank 0's rows */
    ct_tensor *alone_weight = ct_module_parameter(alone, "b.weight");
    ct_tensor *alone_grad = ct_grad(alone_weight);
    ct_tensor *expected = ct_mul_scalar(alone_grad, 1.0 / world_);
    assert_true(relative_difference(grad, expected) <= 1e-6);
    ct_release(weight);
    ct_release(grad);
    ct_release(copy);
    ct_release(alone_weight);
    ct_release(alone_grad);
    ct_release(expected);
    ct_module_release(alone);
    ct_module_release(ddp);
    ct_module_release(model);
    ct_release(b.x);
    ct_release(b.y);
}

/* A hook whose library call fails (on NULL), as a user's hook might. */
static ct_status failing_hook(ct_tensor *leaf, void *context)
{
    (void)leaf;
    (void)context;
    assert_null(ct_clone(NULL));
    return ct_last_error();
}

/* A backward that fails on one rank after DDP started a bucket there fails on every rank with its
 * reason, instead of leaving the others waiting in the buckets it never started; the ranks stay in
 * step, and the next step works. */
static void a_backward_failing_on_one_rank_fails_on_every_rank(void **state)
{
    (void)state;
    batches b = make_batches();
    int64_t local = BATCH / world_, first = rank_ * local;
    ct_module *model = make_model(100);
    ct_ddp_options options = ct_ddp_options_default();
    options.bucket_cap_mb = 1e-6; /* a bucket per parameter */
    options.all_reduce_start = CT_DDP_START_DURING_BACKWARD;
    ct_module *ddp = ct_distributed_data_parallel(model, &options);
    assert_non_null(ddp);
    int bad_rank = world_ - 1;
    ct_named_tensors *params = ct_module_named_parameters(model);
    assert_non_null(params);
    /* After DDP's own hook (registered first): the first gradient's bucket starts, then backward fails. */
    for (int64_t i = 0; rank_ == bad_rank && i < params->count; i++)
        assert_int_equal(ct_register_post_accumulate_grad_hook(params->tensors[i], failing_hook, NULL), CT_OK);
    assert_int_equal(forward_backward(ddp, &b, 0, first, local, CT_DEVICE_CPU), CT_ERR_NULL_ARGUMENT);
    if (rank_ == bad_rank) {
        assert_error(CT_ERR_NULL_ARGUMENT, "ct_clone");
    } else {
        char expected[64];
        snprintf(expected, sizeof expected, "rank %d could not take part: ct_clone", bad_rank);
        assert_error(CT_ERR_NULL_ARGUMENT, expected);
    }
    for (int64_t i = 0; rank_ == bad_rank && i < params->count; i++)
        assert_int_equal(ct_remove_post_accumulate_grad_hook(params->tensors[i], failing_hook, NULL), CT_OK);
    assert_int_equal(ct_dist_barrier(), CT_OK);
    ct_module_zero_grad(model);
    assert_int_equal(forward_backward(ddp, &b, 1, first, local, CT_DEVICE_CPU), CT_OK);
    ct_named_tensors_free(params);
    ct_module_release(ddp);
    ct_module_release(model);
    ct_release(b.x);
    ct_release(b.y);
}

static void every_rank_must_wrap_the_same_model(void **state)
{
    (void)state;
    if (world_ < 2) skip();
    /* Another parameter count on rank 1. */
    ct_manual_seed(1);
    ct_module *model = rank_ == 0 ? ct_linear(4, 4, true) : ct_linear(4, 4, false);
    assert_null(ct_distributed_data_parallel(model, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "every rank must wrap the same model");
    ct_module_release(model);
    /* The same counts, other shapes: found by the broadcast of the first parameter. */
    model = rank_ == 0 ? ct_linear(2, 6, false) : ct_linear(6, 2, false);
    assert_null(ct_distributed_data_parallel(model, NULL));
    assert_error(CT_ERR_SHAPE, "copying 'weight' from rank 0");
    ct_module_release(model);
    assert_int_equal(ct_dist_barrier(), CT_OK);
}

static void the_wrapper_names_and_errors(void **state)
{
    (void)state;
    ct_module *model = make_model(1);
    ct_module *ddp = ct_distributed_data_parallel(model, NULL);
    assert_true(ct_is_distributed_data_parallel(ddp));
    assert_false(ct_is_distributed_data_parallel(model));
    assert_string_equal(ct_module_kind(ddp), "DistributedDataParallel");
    ct_state_dict *sd = ct_module_state_dict(ddp, NULL);
    ct_tensor *saved = ct_state_dict_get(sd, "module.0.weight");
    assert_non_null(saved);
    ct_release(saved);
    ct_state_dict_free(sd);
    assert_int_equal(ct_ddp_no_sync_pop(ddp), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "no ct_ddp_no_sync_push");
    assert_int_equal(ct_ddp_no_sync_push(model), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "not a DistributedDataParallel");
    assert_null(ct_distributed_data_parallel(NULL, NULL));
    assert_error(CT_ERR_NULL_ARGUMENT, "module");
    ct_ddp_options options = ct_ddp_options_default();
    options.bucket_cap_mb = 0;
    assert_null(ct_distributed_data_parallel(model, &options));
    assert_error(CT_ERR_INVALID_ARGUMENT, "bucket_cap_mb is 0");
    options = ct_ddp_options_default();
    options.all_reduce_start = (ct_ddp_all_reduce_start)7;
    assert_null(ct_distributed_data_parallel(model, &options));
    assert_error(CT_ERR_INVALID_ARGUMENT, "all_reduce_start is 7");
    /* Evaluating without grad communicates nothing: rank 0 may do it alone. */
    if (rank_ == 0) {
        ct_scope_push();
        int64_t shape[2] = {3, FEATURES};
        ct_no_grad_push();
        assert_non_null(ct_module_forward(ddp, ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU)));
        ct_no_grad_pop();
        ct_scope_pop();
    }
    assert_int_equal(ct_dist_barrier(), CT_OK);
    ct_module_release(ddp);
    ct_module_release(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ddp_trains_as_one_process_with_the_whole_batch),
        cmocka_unit_test(no_sync_accumulates_locally_then_averages_everything),
        cmocka_unit_test(ddp_with_sync_batch_norm_trains_as_one_process),
        cmocka_unit_test(a_parameter_without_a_gradient_is_named_unless_allowed),
        cmocka_unit_test(a_backward_failing_on_one_rank_fails_on_every_rank),
        cmocka_unit_test(every_rank_must_wrap_the_same_model),
        cmocka_unit_test(the_wrapper_names_and_errors),
    };
    return dist_test_main(tests, DIST_TEST_LEN(tests), &rank_, &world_);
}
