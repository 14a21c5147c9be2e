/* Module and optimizer checkpoints: state_dict names and order, round trips through a
 * safetensors file between devices, strict and non-strict loading with their messages, the
 * 'module.' prefix, and optimizer state that resumes training exactly. */
#include <unistd.h>

#include "nn/nn_test.h"

static char folder[256];

static int make_folder(void **state)
{
    (void)state;
    snprintf(folder, sizeof folder, "/tmp/ctorch-test-state-dict-XXXXXX");
    return mkdtemp(folder) ? 0 : -1;
}

static int remove_folder(void **state)
{
    (void)state;
    char command[300];
    snprintf(command, sizeof command, "rm -rf '%s'", folder);
    return system(command) == 0 ? 0 : -1;
}

/* Net: encoder = Sequential(Linear(3, 4), ReLU), with a buffer "steps" (int64) on the root,
 * head = Linear(4, 2). */
static ct_module *make_net(uint64_t seed)
{
    ct_manual_seed(seed);
    ct_module *net = ct_module_create("Net", NULL, NULL, NULL);
    ct_module *encoder = ct_sequential((ct_module *[]){ct_linear(3, 4, true), ct_relu_module()}, 2);
    ct_module *head = ct_linear(4, 2, true);
    ct_tensor *steps = ct_full((int64_t[]){1}, 1, (double)seed, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_module_register_buffer(net, "steps", steps), CT_OK);
    assert_int_equal(ct_module_register_module(net, "encoder", encoder), CT_OK);
    assert_int_equal(ct_module_register_module(net, "head", head), CT_OK);
    ct_release(steps);
    ct_module_release(encoder);
    ct_module_release(head);
    return net;
}

static void names_in_pytorchs_order(void **state)
{
    (void)state;
    ct_module *net = make_net(1);
    ct_state_dict *sd = ct_module_state_dict(net, NULL);
    const char *want[] = {"steps", "encoder.0.weight", "encoder.0.bias", "head.weight", "head.bias"};
    assert_int_equal(ct_state_dict_count(sd), 5);
    for (int i = 0; i < 5; i++) assert_string_equal(ct_state_dict_name_at(sd, i), want[i]);
    /* views of the module's tensors, outside the graph */
    ct_tensor *w = ct_state_dict_get(sd, "head.weight"), *p = ct_module_parameter(net, "head.weight");
    assert_true(ct_tensor_shares_storage(w, p));
    assert_false(ct_requires_grad(w));
    ct_release(w);
    ct_release(p);
    ct_state_dict_free(sd);
    sd = ct_module_state_dict(net, "module.");
    assert_string_equal(ct_state_dict_name_at(sd, 1), "module.encoder.0.weight");
    ct_state_dict_free(sd);
    ct_module_release(net);
}

/* Saved from `from`, loaded with map_location into a model on `to`: the same values, the same
 * tensor objects, the same outputs. */
static void round_trip(ct_device from, ct_device to, const char *map_location)
{
    ct_module *saved = make_net(7), *loaded = make_net(8);
    assert_int_equal(ct_module_to(saved, from), CT_OK);
    assert_int_equal(ct_module_to(loaded, to), CT_OK);
    ct_tensor *before = ct_module_parameter(loaded, "head.weight");
    char path[300];
    snprintf(path, sizeof path, "%s/net.safetensors", folder);
    ct_state_dict *sd = ct_module_state_dict(saved, NULL);
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict_free(sd);
    sd = ct_load(path, map_location);
    assert_non_null(sd);
    ct_load_report report;
    assert_int_equal(ct_module_load_state_dict(loaded, sd, true, &report), CT_OK);
    assert_int_equal(report.loaded, 5);
    assert_int_equal(report.missing + report.unexpected + report.mismatched, 0);
    assert_string_equal(report.message, "");
    ct_state_dict_free(sd);

    ct_tensor *after = ct_module_parameter(loaded, "head.weight");
    assert_ptr_equal(before, after);
    assert_true(ct_device_equal(ct_tensor_device(after), to));
    const char *names[] = {"steps", "encoder.0.weight", "head.bias"};
    const int64_t sizes[] = {1, 12, 2};
    for (int k = 0; k < 3; k++) {
        double a[12], b[12];
        values_by_module(saved, names[k], a, sizes[k]);
        values_by_module(loaded, names[k], b, sizes[k]);
        assert_close_array(b, a, sizes[k], 0, 0, names[k]);
    }
    ct_release(before);
    ct_release(after);
    ct_module_release(saved);
    ct_module_release(loaded);
}

static void round_trips_between_devices(void **state)
{
    (void)state;
    round_trip(CT_DEVICE_CPU, CT_DEVICE_CPU, NULL);
    if (!have_opencl()) return;
    round_trip(OPENCL0, CT_DEVICE_CPU, "cpu");      /* saved on the device, loaded on the cpu */
    round_trip(CT_DEVICE_CPU, OPENCL0, NULL);       /* values go onto the module's device */
    round_trip(OPENCL0, OPENCL0, "opencl:0=opencl:1"); /* wherever the state dict's tensors are */
}

static void strict_loading_reports_every_key_and_changes_nothing(void **state)
{
    (void)state;
    ct_module *net = make_net(3), *other = make_net(4);
    double before[12], after[12];
    values_by_module(net, "encoder.0.weight", before, 12);

    /* a checkpoint of a DataParallel-wrapped model */
    ct_state_dict *wrapped = ct_module_state_dict(other, "module.");
    ct_load_report report;
    assert_int_equal(ct_module_load_state_dict(net, wrapped, true, &report), CT_ERR_INVALID_ARGUMENT);
    const char *message = ct_last_error_message();
    const char *parts[] = {
        "ct_module_load_state_dict: Error(s) in loading state_dict for Net: ",
        "Missing key(s) in state_dict: \"steps\", \"encoder.0.weight\", \"encoder.0.bias\", \"head.weight\", \"head.bias\".",
        "Unexpected key(s) in state_dict: \"module.steps\", \"module.encoder.0.weight\", \"module.encoder.0.bias\", "
        "\"module.head.weight\", \"module.head.bias\".",
        "ct_state_dict_strip_prefix(sd, \"module.\")",
    };
    for (int i = 0; i < 4; i++)
        if (!strstr(message, parts[i])) fail_msg("message '%s' lacks '%s'", message, parts[i]);
    assert_int_equal(report.missing, 5);
    assert_int_equal(report.unexpected, 5);
    assert_int_equal(report.loaded, 0);
    ct_clear_error();
    values_by_module(net, "encoder.0.weight", after, 12);
    assert_close_array(after, before, 12, 0, 0, "unchanged");

    /* stripped, it loads */
    assert_int_equal(ct_state_dict_strip_prefix(wrapped, "module."), CT_OK);
    assert_int_equal(ct_module_load_state_dict(net, wrapped, true, NULL), CT_OK);
    double want[12];
    values_by_module(other, "encoder.0.weight", want, 12);
    values_by_module(net, "encoder.0.weight", after, 12);
    assert_close_array(after, want, 12, 0, 0, "loaded");

    /* a size mismatch, a missing and an unexpected key together */
    ct_tensor *wide = ct_zeros((int64_t[]){2, 5}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *extra = ct_zeros((int64_t[]){1}, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_set(wrapped, "head.weight", wide), CT_OK);
    assert_int_equal(ct_state_dict_remove(wrapped, "steps"), CT_OK);
    assert_int_equal(ct_state_dict_add(wrapped, "head.scale", extra), CT_OK);
    assert_int_equal(ct_module_load_state_dict(net, wrapped, true, &report), CT_ERR_INVALID_ARGUMENT);
    message = ct_last_error_message();
    const char *more[] = {"Missing key(s) in state_dict: \"steps\".", "Unexpected key(s) in state_dict: \"head.scale\".",
                          "size mismatch for head.weight: copying a param with shape [2, 5] from checkpoint, the "
                          "shape in current model is [2, 4]"};
    for (int i = 0; i < 3; i++)
        if (!strstr(message, more[i])) fail_msg("message '%s' lacks '%s'", message, more[i]);
    assert_null(strstr(message, "strip_prefix"));
    ct_clear_error();

    /* not strict: what matches loads, the rest is reported */
    ct_set_log_level(CT_LOG_ERROR); /* keep the warning out of the test's output */
    assert_int_equal(ct_module_load_state_dict(net, wrapped, false, &report), CT_OK);
    ct_set_log_level(CT_LOG_WARN);
    assert_int_equal(report.loaded, 3);
    assert_int_equal(report.missing, 1);
    assert_int_equal(report.unexpected, 1);
    assert_int_equal(report.mismatched, 1);
    assert_non_null(strstr(report.message, "Missing key(s) in state_dict: \"steps\"."));
    assert_int_equal(ct_last_error(), CT_OK);

    assert_int_equal(ct_module_load_state_dict(net, NULL, true, NULL), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_release(wide);
    ct_release(extra);
    ct_state_dict_free(wrapped);
    ct_module_release(net);
    ct_module_release(other);
}

static void values_convert_to_the_modules_dtype(void **state)
{
    (void)state;
    ct_module *net = make_net(5), *source = make_net(6);
    assert_int_equal(ct_module_to_dtype(source, CT_F64), CT_OK);
    ct_state_dict *sd = ct_module_state_dict(source, NULL);
    assert_int_equal(ct_module_load_state_dict(net, sd, true, NULL), CT_OK);
    ct_tensor *w = ct_module_parameter(net, "head.weight");
    assert_int_equal(ct_tensor_dtype(w), CT_F32);
    double got[8], want[8];
    values_of(w, got, 8);
    values_by_module(source, "head.weight", want, 8);
    assert_close_array(got, want, 8, 1e-7, 0, "converted");
    ct_tensor *steps = ct_module_buffer(net, "steps");
    assert_int_equal(ct_tensor_dtype(steps), CT_I64); /* integer buffers keep their dtype */
    ct_release(steps);
    ct_release(w);
    ct_state_dict_free(sd);
    ct_module_release(net);
    ct_module_release(source);
}

/* One step of the optimizer with the gradient of sum(head(encoder(x))^2) for a fixed x. */
static void train_step(ct_module *net, ct_optimizer *o)
{
    ct_scope_push();
    ct_device device = ct_module_device(net);
    ct_tensor *x = ct_full((int64_t[]){2, 3}, 2, 0.5, CT_F32, device);
    ct_tensor *h = ct_module_forward(ct_module_child(net, "encoder"), x);
    ct_tensor *y = ct_module_forward(ct_module_child(net, "head"), h);
    ct_tensor *loss = ct_sum(ct_mul(y, y), NULL, 0, false);
    ct_optimizer_zero_grad(o);
    assert_int_equal(ct_backward(loss), CT_OK);
    assert_int_equal(ct_optimizer_step(o), CT_OK);
    ct_scope_pop();
}

static void optimizer_state_resumes_training(void **state)
{
    (void)state;
    for (int kind = 0; kind < 3; kind++) {
        ct_module *a = make_net(9), *b = make_net(10);
        if (have_opencl()) assert_int_equal(ct_module_to(b, OPENCL0), CT_OK);
        ct_sgd_options sgd = ct_sgd_options_default(0.1);
        sgd.momentum = 0.9;
        ct_adam_options adam = ct_adam_options_default(0.05);
        ct_optimizer *oa = kind == 0 ? ct_optim_sgd(a, &sgd) : kind == 1 ? ct_optim_adam(a, &adam) : ct_optim_adamw(a, &adam);
        sgd.lr = adam.lr = 0.5; /* b's own hyperparameters give way to the loaded ones */
        ct_optimizer *ob = kind == 0 ? ct_optim_sgd(b, &sgd) : kind == 1 ? ct_optim_adam(b, &adam) : ct_optim_adamw(b, &adam);
        for (int step = 0; step < 3; step++) train_step(a, oa);

        char path[300], opath[300];
        snprintf(path, sizeof path, "%s/model.safetensors", folder);
        snprintf(opath, sizeof opath, "%s/optimizer.safetensors", folder);
        ct_state_dict *msd = ct_module_state_dict(a, NULL), *osd = ct_optimizer_state_dict(oa);
        assert_non_null(osd);
        if (kind > 0) {
            assert_true(ct_state_dict_contains(osd, "state.0.exp_avg"));
            assert_true(ct_state_dict_contains(osd, "state.3.exp_avg_sq"));
        } else {
            assert_true(ct_state_dict_contains(osd, "state.2.momentum_buffer"));
        }
        assert_true(ct_state_dict_contains(osd, "param_groups.0.lr"));
        assert_string_equal(ct_state_dict_metadata(osd, "optimizer"), ct_optimizer_kind(oa));
        assert_int_equal(ct_save(msd, path), CT_OK);
        assert_int_equal(ct_save(osd, opath), CT_OK);
        ct_state_dict_free(msd);
        ct_state_dict_free(osd);

        msd = ct_load(path, NULL);
        osd = ct_load(opath, NULL);
        assert_int_equal(ct_module_load_state_dict(b, msd, true, NULL), CT_OK);
        assert_int_equal(ct_optimizer_load_state_dict(ob, osd), CT_OK);
        assert_true(ct_optimizer_lr(ob) == ct_optimizer_lr(oa));
        assert_int_equal(ct_optimizer_steps(ob), 3);
        ct_tensor *s = ct_optimizer_state(ob, 0, kind == 0 ? "momentum_buffer" : "exp_avg");
        assert_true(ct_device_equal(ct_tensor_device(s), ct_module_device(b)));
        ct_release(s);
        for (int step = 0; step < 2; step++) {
            train_step(a, oa);
            train_step(b, ob);
        }
        double wa[12], wb[12];
        values_by_module(a, "encoder.0.weight", wa, 12);
        values_by_module(b, "encoder.0.weight", wb, 12);
        assert_close_array(wb, wa, 12, 1e-5, 1e-6, "resumed");

        /* the wrong optimizer, or a different model */
        ct_optimizer *wrong = kind == 0 ? ct_optim_adam(b, &adam) : ct_optim_sgd(b, &sgd);
        assert_int_equal(ct_optimizer_load_state_dict(wrong, osd), CT_ERR_INVALID_ARGUMENT);
        assert_error(CT_ERR_INVALID_ARGUMENT, "optimizer, not");
        ct_optimizer_free(wrong);
        ct_tensor *w = ct_module_parameter(b, "head.weight");
        ct_optimizer *fewer = kind == 0 ? ct_optim_sgd_params(&w, 1, &sgd) : kind == 1 ? ct_optim_adam_params(&w, 1, &adam)
                                                                              : ct_optim_adamw_params(&w, 1, &adam);
        assert_int_equal(ct_optimizer_load_state_dict(fewer, osd), CT_ERR_INVALID_ARGUMENT);
        assert_error(CT_ERR_INVALID_ARGUMENT, "doesn't match the size of optimizer's group (4 saved parameters, 1 here)");
        ct_optimizer_free(fewer);
        ct_release(w);
        ct_tensor *odd = ct_zeros((int64_t[]){5}, 1, CT_F32, CT_DEVICE_CPU);
        assert_int_equal(ct_state_dict_set(osd, kind == 0 ? "state.1.momentum_buffer" : "state.1.exp_avg", odd), CT_OK);
        assert_int_equal(ct_optimizer_load_state_dict(ob, osd), CT_ERR_SHAPE);
        assert_error(CT_ERR_SHAPE, "has shape [5] but parameter 1 has shape [4]");
        assert_int_equal(ct_state_dict_remove(osd, kind == 0 ? "state.1.momentum_buffer" : "state.1.exp_avg"), CT_OK);
        assert_int_equal(ct_state_dict_add(osd, "state.9.step", odd), CT_OK);
        assert_int_equal(ct_optimizer_load_state_dict(ob, osd), CT_ERR_INVALID_ARGUMENT);
        assert_error(CT_ERR_INVALID_ARGUMENT, "unexpected key 'state.9.step'");
        ct_release(odd);

        ct_state_dict_free(msd);
        ct_state_dict_free(osd);
        ct_optimizer_free(oa);
        ct_optimizer_free(ob);
        ct_module_release(a);
        ct_module_release(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_in_pytorchs_order),
        cmocka_unit_test(round_trips_between_devices),
        cmocka_unit_test(strict_loading_reports_every_key_and_changes_nothing),
        cmocka_unit_test(values_convert_to_the_modules_dtype),
        cmocka_unit_test(optimizer_state_resumes_training),
    };
    return cmocka_run_group_tests(tests, make_folder, remove_folder);
}
