/* Every public function given NULL for a pointer it needs answers CT_ERR_NULL_ARGUMENT (a status,
 * or a NULL or neutral result with that error recorded) and never dereferences it. This walks the
 * whole public API (every header of include/ctorch/), each pointer argument in turn; pointers documented as
 * optional (options NULL for defaults, a bias, a report, a stream meaning the default stream) are
 * left out, and so are the NULL-safe release functions, which do nothing for NULL as free does
 * (ct_dist_work_wait, which frees the work, among them). */
#include "test_common.h"

/* Every failing call is reported; each part fails at its end if any did. */
static int failures;
#define report(...) (print_error(__VA_ARGS__), print_error("\n"), failures++)
#define assert_no_failures()                                                                     \
    do {                                                                                         \
        int seen_ = failures;                                                                    \
        failures = 0;                                                                            \
        assert_int_equal(seen_, 0);                                                              \
    } while (0)

/* The call returns that status and records it. */
#define expect_status(call)                                                                      \
    do {                                                                                         \
        ct_clear_error();                                                                        \
        ct_status status_ = (call);                                                              \
        if (status_ != CT_ERR_NULL_ARGUMENT || ct_last_error() != CT_ERR_NULL_ARGUMENT)           \
            report("%s gave %s (recorded %s: %s)", #call, ct_status_name(status_),              \
                     ct_status_name(ct_last_error()), ct_last_error_message());                  \
    } while (0)
/* The call returns NULL and records CT_ERR_NULL_ARGUMENT. */
#define expect_null(call)                                                                        \
    do {                                                                                         \
        ct_clear_error();                                                                        \
        const void *result_ = (call);                                                            \
        if (result_ != NULL || ct_last_error() != CT_ERR_NULL_ARGUMENT)                          \
            report("%s gave %p (recorded %s: %s)", #call, result_,                             \
                     ct_status_name(ct_last_error()), ct_last_error_message());                  \
    } while (0)
/* A query or void call: it records CT_ERR_NULL_ARGUMENT (its result is a neutral value). */
#define expect_recorded(call)                                                                    \
    do {                                                                                         \
        ct_clear_error();                                                                        \
        (void)(call);                                                                            \
        if (ct_last_error() != CT_ERR_NULL_ARGUMENT)                                             \
            report("%s recorded %s: %s", #call, ct_status_name(ct_last_error()),                \
                     ct_last_error_message());                                                   \
    } while (0)

static ct_tensor *identity_forward(ct_module *self, const ct_tensor *input)
{
    (void)self;
    return ct_retain((ct_tensor *)input);
}
static ct_status a_hook(ct_tensor *leaf, void *context) { (void)leaf, (void)context; return CT_OK; }
static ct_status a_callback(void *context, ct_status status) { (void)context; return status; }

static void core_device_and_memory(void **state)
{
    (void)state;
    ct_device device;
    char buf[CT_DEVICE_STRING_MAX];
    expect_status(ct_device_parse(NULL, &device));
    expect_status(ct_device_parse("cpu", NULL));
    expect_status(ct_device_parse_syntax(NULL, &device));
    expect_status(ct_device_parse_syntax("cpu", NULL));
    expect_null(ct_device_format(CT_DEVICE_CPU, NULL, 32));
    expect_null(ct_device_format(CT_DEVICE_CPU, buf, 0));
    expect_status(ct_get_device_properties(CT_DEVICE_CPU, NULL));
    size_t bytes;
    expect_status(ct_mem_get_info(CT_DEVICE_CPU, NULL, &bytes));
    expect_status(ct_mem_get_info(CT_DEVICE_CPU, &bytes, NULL));
    expect_status(ct_device_guard_enter(NULL, CT_DEVICE_CPU));
    expect_status(ct_best_device(NULL));
    expect_status(ct_memory_stats_get(CT_DEVICE_CPU, NULL));
    expect_status(ct_transfer_stats_get(CT_DEVICE_CPU, NULL));
    expect_status(ct_device_kernel_launches(CT_DEVICE_CPU, NULL));
    bool found_inf;
    expect_status(ct_optimizer_step_unscaled(NULL, 1.0, &found_inf));
    expect_status(ct_optimizer_set_fused(NULL, true));
    int count;
    expect_status(ct_devices_by_free_memory(CT_CPU, NULL, 4, &count));
    expect_status(ct_devices_by_free_memory(CT_CPU, &device, 1, NULL));
    expect_status(ct_device_list_parse(NULL, &device, 1, &count));
    expect_status(ct_device_list_parse("cpu", NULL, 1, &count));
    expect_status(ct_device_list_parse("cpu", &device, 1, NULL));
    expect_status(ct_dist_device(NULL));
    expect_status(ct_dist_device_from("cpu", NULL));
    expect_status(ct_set_float32_matmul_precision(NULL));
    assert_no_failures();
}

static void tensors(void **state)
{
    (void)state;
    const int64_t shape[2] = {2, 2};
    ct_tensor *t = ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(t);
    expect_null(ct_retain(NULL));
    expect_recorded(ct_refcount(NULL));
    expect_null(ct_scope_keep(NULL));
    float data[4] = {0};
    expect_null(ct_tensor_from_data(NULL, CT_F32, shape, 2, CT_DEVICE_CPU));
    expect_null(ct_tensor_from_data(data, CT_F32, NULL, 2, CT_DEVICE_CPU));
    expect_null(ct_empty(NULL, 2, CT_F32, CT_DEVICE_CPU));
    expect_null(ct_zeros(NULL, 2, CT_F32, CT_DEVICE_CPU));
    expect_null(ct_ones(NULL, 2, CT_F32, CT_DEVICE_CPU));
    expect_null(ct_full(NULL, 2, 1, CT_F32, CT_DEVICE_CPU));
    expect_null(ct_rand(NULL, 2, CT_F32, CT_DEVICE_CPU));
    expect_null(ct_randn(NULL, 2, CT_F32, CT_DEVICE_CPU));
    expect_null(ct_randint(0, 5, NULL, 2, CT_I64, CT_DEVICE_CPU));
    expect_null(ct_empty_pinned(NULL, 2, CT_F32));
    expect_recorded(ct_tensor_dtype(NULL));
    expect_recorded(ct_tensor_device(NULL));
    expect_recorded(ct_tensor_is_cuda(NULL));
    expect_recorded(ct_tensor_ndim(NULL));
    expect_recorded(ct_tensor_size(NULL, 0));
    expect_null(ct_tensor_shape(NULL));
    expect_null(ct_tensor_strides(NULL));
    expect_recorded(ct_tensor_offset(NULL));
    expect_recorded(ct_numel(NULL));
    expect_recorded(ct_is_contiguous(NULL));
    expect_recorded(ct_tensor_shares_storage(NULL, t));
    expect_recorded(ct_tensor_shares_storage(t, NULL));
    expect_recorded(ct_is_pinned(NULL));
    expect_null(ct_reshape(NULL, shape, 2));
    expect_null(ct_reshape(t, NULL, 2));
    expect_null(ct_view(NULL, shape, 2));
    expect_null(ct_view(t, NULL, 2));
    expect_null(ct_transpose(NULL, 0, 1));
    expect_null(ct_permute(NULL, (const int[]){1, 0}, 2));
    expect_null(ct_permute(t, NULL, 2));
    expect_null(ct_narrow(NULL, 0, 0, 1));
    expect_null(ct_slice(NULL, 0, 0, 1, 1));
    expect_null(ct_select(NULL, 0, 0));
    expect_null(ct_squeeze(NULL));
    expect_null(ct_squeeze_dim(NULL, 0));
    expect_null(ct_unsqueeze(NULL, 0));
    expect_null(ct_expand(NULL, shape, 2));
    expect_null(ct_expand(t, NULL, 2));
    expect_null(ct_flatten(NULL, 0, 1));
    expect_null(ct_contiguous(NULL));
    ct_tensor *parts[2];
    int count;
    expect_status(ct_chunk(NULL, 2, 0, parts, 2, &count));
    expect_status(ct_chunk(t, 2, 0, NULL, 2, &count));
    expect_status(ct_chunk(t, 2, 0, parts, 2, NULL));
    expect_status(ct_split(NULL, 1, 0, parts, 2, &count));
    expect_status(ct_split(t, 1, 0, NULL, 2, &count));
    expect_status(ct_split(t, 1, 0, parts, 2, NULL));
    expect_null(ct_to(NULL, CT_DEVICE_CPU));
    expect_null(ct_to_dtype(NULL, CT_F64));
    ct_to_options options = ct_to_options_default(CT_DEVICE_CPU);
    expect_null(ct_to_with(NULL, &options));
    expect_null(ct_to_with(t, NULL));
    expect_null(ct_clone(NULL));
    expect_null(ct_pin_memory(NULL));
    expect_status(ct_copy_(NULL, t));
    expect_status(ct_copy_(t, NULL));
    expect_status(ct_tensor_to_array(NULL, data, sizeof data));
    expect_status(ct_tensor_to_array(t, NULL, sizeof data));
    ct_tensor *one = ct_zeros(NULL, 0, CT_F32, CT_DEVICE_CPU);
    double value;
    int64_t integer;
    expect_status(ct_item(NULL, &value));
    expect_status(ct_item(one, NULL));
    expect_status(ct_item_int64(NULL, &integer));
    expect_status(ct_item_int64(one, NULL));
    expect_null(ct_tensor_to_string(NULL));
    expect_status(ct_fprint(NULL, t));
    expect_status(ct_fprint(stdout, NULL));
    expect_status(ct_print(NULL));
    expect_status(ct_tensor_record_stream(NULL, NULL));
    ct_release(one);
    ct_release(t);
    assert_no_failures();
}

static void ops_and_autograd(void **state)
{
    (void)state;
    const int64_t shape[2] = {2, 2};
    ct_tensor *t = ct_ones(shape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *(*binary[])(const ct_tensor *, const ct_tensor *) = {
        ct_add, ct_sub, ct_mul, ct_div, ct_pow, ct_maximum, ct_minimum, ct_eq, ct_ne, ct_lt, ct_le,
        ct_gt, ct_ge, ct_matmul, ct_mse_loss, ct_nll_loss,
    };
    for (size_t k = 0; k < sizeof binary / sizeof binary[0]; k++) {
        expect_null(binary[k](NULL, t));
        expect_null(binary[k](t, NULL));
    }
    ct_tensor *(*scalar[])(const ct_tensor *, double) = {
        ct_add_scalar, ct_sub_scalar, ct_mul_scalar, ct_div_scalar, ct_pow_scalar, ct_eq_scalar,
        ct_ne_scalar, ct_lt_scalar, ct_le_scalar, ct_gt_scalar, ct_ge_scalar, ct_clamp_min, ct_clamp_max,
    };
    for (size_t k = 0; k < sizeof scalar / sizeof scalar[0]; k++) expect_null(scalar[k](NULL, 1));
    ct_tensor *(*unary[])(const ct_tensor *) = {
        ct_neg, ct_abs, ct_exp, ct_log, ct_sqrt, ct_relu, ct_sigmoid, ct_tanh, ct_gelu, ct_gelu_tanh,
        ct_argmax_all, ct_argmin_all, ct_detach, ct_grad,
    };
    for (size_t k = 0; k < sizeof unary / sizeof unary[0]; k++) expect_null(unary[k](NULL));
    expect_null(ct_where(NULL, t, t));
    expect_null(ct_where(t, NULL, t));
    expect_null(ct_where(t, t, NULL));
    expect_null(ct_clamp(NULL, 0, 1));
    ct_tensor *(*reduce[])(const ct_tensor *, const int *, int, bool) = {ct_sum, ct_mean, ct_max, ct_min};
    for (size_t k = 0; k < sizeof reduce / sizeof reduce[0]; k++) {
        expect_null(reduce[k](NULL, NULL, 0, false));
        expect_null(reduce[k](t, NULL, 1, false)); /* ndims 1 needs the dims */
    }
    expect_null(ct_var(NULL, NULL, 0, 1, false));
    expect_null(ct_var(t, NULL, 1, 1, false));
    expect_null(ct_std(NULL, NULL, 0, 1, false));
    expect_null(ct_std(t, NULL, 1, 1, false));
    expect_null(ct_argmax(NULL, 0, false));
    expect_null(ct_argmin(NULL, 0, false));
    expect_null(ct_softmax(NULL, 0));
    expect_null(ct_log_softmax(NULL, 0));
    const ct_tensor *pair[2] = {t, NULL};
    expect_null(ct_cat(NULL, 2, 0));
    expect_null(ct_cat(pair, 2, 0));
    expect_null(ct_stack(NULL, 2, 0));
    expect_null(ct_stack(pair, 2, 0));
    ct_tensor *index = ct_zeros((const int64_t[]){2}, 1, CT_I64, CT_DEVICE_CPU);
    expect_null(ct_index_select(NULL, 0, index));
    expect_null(ct_index_select(t, 0, NULL));
    expect_null(ct_gather(NULL, 0, index));
    expect_null(ct_gather(t, 0, NULL));
    expect_null(ct_one_hot(NULL, 3));
    expect_null(ct_cross_entropy(NULL, index, 0));
    expect_null(ct_cross_entropy(t, NULL, 0));
    ct_tensor *image = ct_ones((const int64_t[]){1, 1, 2, 2}, 4, CT_F32, CT_DEVICE_CPU);
    const int64_t window[2] = {1, 1};
    expect_null(ct_conv2d(NULL, image, NULL, NULL, NULL, NULL, 1));
    expect_null(ct_conv2d(image, NULL, NULL, NULL, NULL, NULL, 1));
    expect_null(ct_max_pool2d(NULL, window, NULL, NULL));
    expect_null(ct_max_pool2d(image, NULL, NULL, NULL));
    ct_tensor *indices;
    expect_null(ct_max_pool2d_with_indices(NULL, window, NULL, NULL, &indices));
    expect_null(ct_max_pool2d_with_indices(image, NULL, NULL, NULL, &indices));
    expect_null(ct_avg_pool2d(NULL, window, NULL, NULL, true));
    expect_null(ct_avg_pool2d(image, NULL, NULL, NULL, true));
    expect_null(ct_batch_norm(NULL, NULL, NULL, NULL, NULL, true, 0.1, 1e-5));
    expect_null(ct_batch_norm(image, NULL, NULL, NULL, NULL, false, 0.1, 1e-5)); /* eval needs them */
    ct_tensor *channel = ct_ones((const int64_t[]){1}, 1, CT_F32, CT_DEVICE_CPU);
    expect_null(ct_batch_norm(image, channel, NULL, NULL, NULL, true, 0.1, 1e-5)); /* both or none */
    ct_release(channel);
    const int64_t last[1] = {1};
    expect_null(ct_layer_norm(NULL, last, 1, NULL, NULL, 1e-5));
    expect_null(ct_layer_norm(image, NULL, 1, NULL, NULL, 1e-5));
    ct_tensor *picks = ct_zeros(last, 1, CT_I64, CT_DEVICE_CPU);
    expect_null(ct_embedding(NULL, picks, -1));
    expect_null(ct_embedding(image, NULL, -1));
    ct_release(picks);
    expect_null(ct_layer_norm_module(NULL, 1, 1e-5, true));
    expect_null(ct_gelu_module_approximate(NULL));

    expect_status(ct_requires_grad_(NULL, true));
    expect_recorded(ct_requires_grad(NULL));
    expect_recorded(ct_is_leaf(NULL));
    expect_recorded(ct_zero_grad(NULL));
    expect_null(ct_grad_fn_name(NULL));
    expect_status(ct_backward(NULL));
    expect_status(ct_backward_with(NULL, NULL, false));
    expect_status(ct_register_post_accumulate_grad_hook(NULL, a_hook, NULL));
    expect_status(ct_register_post_accumulate_grad_hook(t, NULL, NULL));
    expect_status(ct_remove_post_accumulate_grad_hook(NULL, a_hook, NULL));
    expect_status(ct_remove_post_accumulate_grad_hook(t, NULL, NULL));
    expect_status(ct_autograd_queue_callback(NULL, NULL));
    (void)a_callback;
    ct_release(image);
    ct_release(index);
    ct_release(t);
    assert_no_failures();
}

static void state_dicts_and_files(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    ct_tensor *t = ct_zeros((const int64_t[]){2}, 1, CT_F32, CT_DEVICE_CPU);
    expect_status(ct_state_dict_add(NULL, "a", t));
    expect_status(ct_state_dict_add(sd, NULL, t));
    expect_status(ct_state_dict_add(sd, "a", NULL));
    expect_status(ct_state_dict_set(NULL, "a", t));
    expect_status(ct_state_dict_set(sd, NULL, t));
    expect_status(ct_state_dict_set(sd, "a", NULL));
    expect_null(ct_state_dict_get(NULL, "a"));
    expect_null(ct_state_dict_get(sd, NULL));
    expect_recorded(ct_state_dict_find(NULL, "a"));
    expect_recorded(ct_state_dict_find(sd, NULL));
    expect_recorded(ct_state_dict_contains(NULL, "a"));
    expect_recorded(ct_state_dict_contains(sd, NULL));
    expect_recorded(ct_state_dict_count(NULL));
    expect_null(ct_state_dict_name_at(NULL, 0));
    expect_null(ct_state_dict_tensor_at(NULL, 0));
    expect_status(ct_state_dict_remove(NULL, "a"));
    expect_status(ct_state_dict_remove(sd, NULL));
    expect_status(ct_state_dict_strip_prefix(NULL, "m."));
    expect_status(ct_state_dict_strip_prefix(sd, NULL));
    expect_status(ct_state_dict_add_prefix(NULL, "m."));
    expect_status(ct_state_dict_add_prefix(sd, NULL));
    expect_status(ct_state_dict_set_metadata(NULL, "k", "v"));
    expect_status(ct_state_dict_set_metadata(sd, NULL, "v"));
    expect_status(ct_state_dict_set_metadata(sd, "k", NULL));
    expect_null(ct_state_dict_metadata(NULL, "k"));
    expect_null(ct_state_dict_metadata(sd, NULL));
    expect_recorded(ct_state_dict_metadata_count(NULL));
    expect_null(ct_state_dict_metadata_key_at(NULL, 0));
    expect_null(ct_state_dict_metadata_value_at(NULL, 0));
    expect_status(ct_save(NULL, "/tmp/never-written.safetensors"));
    expect_status(ct_save(sd, NULL));
    expect_null(ct_load(NULL, NULL));
    ct_release(t);
    ct_state_dict_free(sd);
    assert_no_failures();
}

static void modules_and_optimizers(void **state)
{
    (void)state;
    ct_module *m = ct_linear(2, 2, true);
    ct_tensor *t = ct_zeros((const int64_t[]){2}, 1, CT_F32, CT_DEVICE_CPU);
    expect_null(ct_module_create(NULL, identity_forward, NULL, NULL));
    expect_null(ct_module_retain(NULL));
    expect_recorded(ct_module_refcount(NULL));
    expect_null(ct_module_kind(NULL));
    expect_null(ct_module_data(NULL));
    expect_status(ct_module_register_parameter(NULL, "p", t));
    expect_status(ct_module_register_parameter(m, NULL, t));
    expect_status(ct_module_register_parameter(m, "p", NULL));
    expect_status(ct_module_register_buffer(NULL, "b", t));
    expect_status(ct_module_register_buffer(m, NULL, t));
    expect_status(ct_module_register_buffer(m, "b", NULL));
    expect_status(ct_module_register_module(NULL, "c", m));
    expect_status(ct_module_register_module(m, NULL, m));
    expect_status(ct_module_register_module(m, "c", NULL));
    expect_null(ct_module_parameter(NULL, "weight"));
    expect_null(ct_module_parameter(m, NULL));
    expect_null(ct_module_buffer(NULL, "b"));
    expect_null(ct_module_buffer(m, NULL));
    expect_null(ct_module_child(NULL, "c"));
    expect_null(ct_module_child(m, NULL));
    expect_recorded(ct_module_child_count(NULL));
    expect_null(ct_module_child_at(NULL, 0));
    expect_null(ct_module_forward(NULL, t));
    expect_null(ct_module_forward(m, NULL));
    expect_recorded(ct_module_train(NULL, true));
    expect_recorded(ct_module_eval(NULL));
    expect_recorded(ct_module_is_training(NULL));
    expect_null(ct_module_named_parameters(NULL));
    expect_null(ct_module_named_buffers(NULL));
    expect_recorded(ct_module_parameter_count(NULL));
    expect_recorded(ct_module_num_parameters(NULL));
    expect_recorded(ct_module_zero_grad(NULL));
    expect_status(ct_module_to(NULL, CT_DEVICE_CPU));
    expect_status(ct_module_to_dtype(NULL, CT_F64));
    expect_recorded(ct_module_device(NULL));
    expect_null(ct_module_state_dict(NULL, NULL));
    ct_state_dict *sd = ct_module_state_dict(m, NULL);
    expect_status(ct_module_load_state_dict(NULL, sd, true, NULL));
    expect_status(ct_module_load_state_dict(m, NULL, true, NULL));
    expect_null(ct_module_to_string(NULL));
    expect_status(ct_module_set_describe(NULL, NULL));
    expect_null(ct_sequential(NULL, 2));
    expect_null(ct_sequential((ct_module *const[]){NULL, NULL}, 2));
    expect_status(ct_sequential_append(NULL, m));
    expect_status(ct_sequential_append(m, NULL));
    expect_null(ct_module_list(NULL, 2));
    expect_null(ct_conv2d_module(1, 1, NULL, NULL));
    expect_null(ct_max_pool2d_module(NULL, NULL, NULL));
    expect_null(ct_avg_pool2d_module(NULL, NULL, NULL, true));
    expect_null(ct_data_parallel(NULL, NULL, 0, CT_DEVICE_CPU));
    expect_null(ct_distributed_data_parallel(NULL, NULL));
    expect_recorded(ct_is_distributed_data_parallel(NULL));
    expect_status(ct_ddp_no_sync_push(NULL));
    expect_status(ct_ddp_no_sync_pop(NULL));
    ct_ddp_stats stats;
    expect_status(ct_ddp_get_stats(NULL, &stats));
    expect_status(ct_convert_sync_batch_norm(NULL, NULL));

    ct_sgd_options sgd = ct_sgd_options_default(0.1);
    ct_adam_options adam = ct_adam_options_default(0.1);
    expect_null(ct_optim_sgd(NULL, &sgd));
    expect_null(ct_optim_adam(NULL, &adam));
    expect_null(ct_optim_adamw(NULL, &adam));
    /* NULL options are the defaults (not a NULL argument) */
    ct_optimizer_free(ct_optim_sgd(m, NULL));
    ct_optimizer_free(ct_optim_adam(m, NULL));
    ct_optimizer_free(ct_optim_adamw(m, NULL));
    expect_null(ct_optim_rmsprop(NULL, NULL));
    expect_null(ct_optim_adagrad(NULL, NULL));
    expect_null(ct_optim_rmsprop_params(NULL, 1, NULL));
    expect_null(ct_optim_adagrad_params(NULL, 1, NULL));
    expect_null(ct_optim_rmsprop_groups(NULL, 1, NULL));
    expect_null(ct_optim_adagrad_groups(NULL, 1, NULL));
    expect_null(ct_optim_sgd_groups(NULL, 1, NULL));
    expect_null(ct_optim_adam_groups(NULL, 1, NULL));
    expect_null(ct_optim_adamw_groups(NULL, 1, NULL));
    expect_recorded(ct_optimizer_group_count(NULL));
    expect_recorded(ct_optimizer_group_lr(NULL, 0));
    expect_status(ct_optimizer_set_group_lr(NULL, 0, 0.1));
    expect_null(ct_optim_sgd_params(NULL, 1, &sgd));
    expect_null(ct_optim_adam_params(NULL, 1, &adam));
    expect_null(ct_optim_adamw_params(NULL, 1, &adam));
    ct_tensor *params[1] = {NULL};
    expect_null(ct_optim_sgd_params(params, 1, &sgd));
    expect_status(ct_optimizer_step(NULL));
    expect_recorded(ct_optimizer_zero_grad(NULL));
    expect_null(ct_optimizer_kind(NULL));
    expect_recorded(ct_optimizer_param_count(NULL));
    expect_null(ct_optimizer_param(NULL, 0));
    expect_recorded(ct_optimizer_lr(NULL));
    expect_status(ct_optimizer_set_lr(NULL, 0.1));
    expect_recorded(ct_optimizer_steps(NULL));
    ct_optimizer *optimizer = ct_optim_sgd(m, &sgd);
    expect_null(ct_optimizer_state(NULL, 0, "momentum_buffer"));
    expect_null(ct_optimizer_state(optimizer, 0, NULL));
    expect_null(ct_optimizer_state_dict(NULL));
    expect_status(ct_optimizer_load_state_dict(NULL, sd));
    expect_status(ct_optimizer_load_state_dict(optimizer, NULL));
    ct_optimizer_free(optimizer);
    /* learning-rate schedulers and gradient clipping */
    ct_lr_scheduler *scheduler = NULL;
    optimizer = ct_optim_sgd(m, &sgd);
    expect_status(ct_lr_scheduler_step_lr(NULL, 1, 0.1, &scheduler));
    expect_status(ct_lr_scheduler_warmup_cosine(NULL, 1, 2, 0.1, &scheduler));
    expect_status(ct_lr_scheduler_warmup_cosine(optimizer, 1, 2, 0.1, NULL));
    expect_status(ct_lr_scheduler_step_lr(optimizer, 1, 0.1, NULL));
    expect_status(ct_lr_scheduler_cosine_annealing(NULL, 1, 0.0, &scheduler));
    expect_status(ct_lr_scheduler_cosine_annealing(optimizer, 1, 0.0, NULL));
    expect_status(ct_lr_scheduler_linear(NULL, 0.5, 1.0, 1, &scheduler));
    expect_status(ct_lr_scheduler_linear(optimizer, 0.5, 1.0, 1, NULL));
    expect_status(ct_lr_scheduler_one_cycle(NULL, 0.1, 10, NULL, &scheduler));
    expect_status(ct_lr_scheduler_one_cycle(optimizer, 0.1, 10, NULL, NULL));
    expect_status(ct_lr_scheduler_step(NULL));
    expect_status(ct_lr_scheduler_set_last_epoch(NULL, 0));
    expect_recorded(ct_lr_scheduler_get_last_lr(NULL));
    expect_recorded(ct_lr_scheduler_last_epoch(NULL));
    expect_null(ct_lr_scheduler_kind(NULL));
    ct_optimizer_free(optimizer);
    expect_status(ct_clip_grad_norm_(NULL, 1, 1.0, 2.0, NULL));
    ct_tensor *none[1] = {NULL};
    expect_status(ct_clip_grad_norm_(none, 1, 1.0, 2.0, NULL));
    expect_status(ct_set_rng_state(NULL));
    ct_state_dict_free(sd);
    ct_release(t);
    ct_module_release(m);
    assert_no_failures();
}

static void data_streams_and_distributed(void **state)
{
    (void)state;
    ct_tensor *x = ct_zeros((const int64_t[]){4, 2}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_zeros((const int64_t[]){4}, 1, CT_I64, CT_DEVICE_CPU);
    expect_null(ct_csv_dataset_load(NULL, NULL));
    expect_null(ct_dataset_from_tensors(NULL, y));
    expect_null(ct_dataset_from_tensors(x, NULL));
    ct_dataset *ds = ct_dataset_from_tensors(x, y);
    assert_non_null(ds);
    expect_recorded(ct_dataset_size(NULL));
    expect_recorded(ct_dataset_num_features(NULL));
    expect_recorded(ct_dataset_num_classes(NULL));
    expect_null(ct_dataset_features(NULL));
    expect_null(ct_dataset_labels(NULL));
    ct_dataset *train, *test;
    expect_status(ct_dataset_split(NULL, 0.5, 0, &train, &test));
    expect_status(ct_dataset_split(ds, 0.5, 0, NULL, &test));
    expect_status(ct_dataset_split(ds, 0.5, 0, &train, NULL));
    expect_status(ct_data_permutation(4, 0, NULL));
    ct_distributed_sampler *sampler = ct_distributed_sampler_create(4, 1, 0, NULL);
    expect_status(ct_distributed_sampler_set_epoch(NULL, 1));
    expect_recorded(ct_distributed_sampler_num_samples(NULL));
    expect_recorded(ct_distributed_sampler_total_size(NULL));
    int64_t indices[4];
    expect_status(ct_distributed_sampler_indices(NULL, indices, 4));
    expect_status(ct_distributed_sampler_indices(sampler, NULL, 4));
    expect_null(ct_data_loader_create(NULL, NULL));
    ct_data_loader *loader = ct_data_loader_create(ds, NULL);
    expect_recorded(ct_data_loader_num_batches(NULL));
    expect_status(ct_data_loader_start_epoch(NULL, 0));
    ct_tensor *bx, *by;
    expect_status(ct_data_loader_next(NULL, &bx, &by));
    expect_status(ct_data_loader_next(loader, NULL, &by));
    expect_status(ct_data_loader_next(loader, &bx, NULL));

    expect_recorded(ct_stream_device(NULL));
    expect_status(ct_set_stream(NULL));
    expect_status(ct_event_record(NULL, NULL));
    expect_status(ct_stream_wait_event(NULL, NULL));
    expect_status(ct_event_synchronize(NULL));
    expect_status(ct_graph_begin(NULL, CT_DEVICE_CPU, NULL));
    expect_status(ct_graph_end(NULL));
    expect_status(ct_graph_replay(NULL));
    expect_recorded(ct_graph_device(NULL));
    expect_recorded(ct_graph_pool_bytes_held(NULL));

    /* Collectives first need a process group (CT_ERR_UNAVAILABLE without one); within a group,
     * a NULL tensor on any rank fails on every rank (tests/distributed/test_mismatch.c). */
    assert_false(ct_dist_is_initialized());
    ct_clear_error();
    assert_int_equal(ct_dist_all_reduce(NULL, CT_REDUCE_SUM), CT_ERR_UNAVAILABLE);
    ct_clear_error();

    ct_data_loader_destroy(loader);
    ct_distributed_sampler_free(sampler);
    ct_dataset_free(ds);
    ct_release(x);
    ct_release(y);
    assert_no_failures();
}

/* NULL-safe release functions do nothing and record nothing. */
/* include/ctorch/models.h */
static void models(void **state)
{
    (void)state;
    ct_gpt_config config = {.vocab_size = 8, .padded_vocab_size = 8, .block_size = 4, .n_layer = 1, .n_head = 1,
                            .n_embd = 4, .dropout = 0.0, .bias = true};
    ct_module *gpt = ct_gpt(&config);
    assert_non_null(gpt);
    ct_tensor *idx = ct_zeros((const int64_t[]){1, 2}, 2, CT_I64, CT_DEVICE_CPU);
    const int64_t prompt[1] = {1};
    int64_t out[4];
    ct_gpt_config back;
    expect_status(ct_gpt_config_check(NULL));
    expect_null(ct_gpt(NULL));
    expect_status(ct_gpt_config_of(NULL, &back));
    expect_status(ct_gpt_config_of(gpt, NULL));
    expect_status(ct_gpt_forward(NULL, idx, NULL, NULL, NULL));
    expect_status(ct_gpt_forward(gpt, NULL, NULL, NULL, NULL));
    expect_status(ct_gpt_load_state_dict(NULL, NULL));
    expect_status(ct_gpt_load_state_dict(gpt, NULL));
    expect_null(ct_gpt_configure_optimizers(NULL, 1e-3, 0.1, 0.9, 0.95));
    expect_status(ct_gpt_generate(NULL, prompt, 1, 2, 1.0, 0, 1, out));
    expect_status(ct_gpt_generate(gpt, NULL, 1, 2, 1.0, 0, 1, out));
    expect_status(ct_gpt_generate(gpt, prompt, 1, 2, 1.0, 0, 1, NULL));
    expect_status(ct_gpt_generate_uncached(NULL, prompt, 1, 2, 1.0, 0, 1, out));
    expect_status(ct_gpt_generate_uncached(gpt, NULL, 1, 2, 1.0, 0, 1, out));
    ct_release(idx);
    ct_module_release(gpt);
    assert_no_failures();
}

static void releasing_null_does_nothing(void **state)
{
    (void)state;
    ct_clear_error();
    ct_release(NULL);
    ct_module_release(NULL);
    ct_module_free(NULL);
    ct_named_tensors_free(NULL);
    ct_state_dict_free(NULL);
    ct_optimizer_free(NULL);
    ct_dataset_free(NULL);
    ct_distributed_sampler_free(NULL);
    ct_data_loader_destroy(NULL);
    ct_stream_destroy(NULL);
    ct_event_destroy(NULL);
    ct_graph_free(NULL);
    ct_device_guard_exit(NULL);
    /* a failed ct_dist_all_reduce_async gives NULL: waiting for it frees nothing, it is done */
    assert_int_equal(ct_dist_work_wait(NULL), CT_OK);
    assert_true(ct_dist_work_is_completed(NULL));
    assert_int_equal(ct_last_error(), CT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(core_device_and_memory),
        cmocka_unit_test(tensors),
        cmocka_unit_test(ops_and_autograd),
        cmocka_unit_test(state_dicts_and_files),
        cmocka_unit_test(modules_and_optimizers),
        cmocka_unit_test(data_streams_and_distributed),
        cmocka_unit_test(models),
        cmocka_unit_test(releasing_null_does_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
