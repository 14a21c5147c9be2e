/* `ctorch train --graph`: the step captured once and replayed gives the very run of the eager
 * loop with the same seed (SGD, Adam, each also with --clip-grad; Adam under --amp bf16; SGD and
 * Adam with a per-epoch schedule, captured again each epoch): every step's loss, the parameters bit for bit, the test accuracy,
 * on the cpu and on opencl:0 (the ragged last batch runs eagerly), and every epoch's reported loss, the
 * same bits (the ragged batch's loss is summed in float32 with the replayed ones, as the eager loop
 * sums); --drop-last leaves it out; the
 * options a replay cannot follow are refused, naming what --graph needs. */
#include <math.h>
#include <stdio.h>

#include "tool_test.h"
#include "train.h"

enum { EPOCHS = 2 };

static ct_train_config config_with(ct_device device, ct_train_optimizer optimizer, bool graph, bool drop_last)
{
    ct_train_config config = ct_train_config_default(CT_TRAIN_MLP);
    config.optimizer = optimizer;
    config.lr = ct_train_default_lr(CT_TRAIN_MLP, optimizer);
    config.epochs = EPOCHS;
    config.seed = 3;
    config.device = device;
    config.graph = graph;
    config.drop_last = drop_last;
    return config;
}

static ct_train_config sgd_config(ct_device device, bool graph, bool drop_last)
{
    return config_with(device, CT_TRAIN_SGD, graph, drop_last);
}

/* Every step's loss and every epoch's reported loss. */
typedef struct run_losses {
    step_losses *steps;
    double epochs[EPOCHS];
} run_losses;

static void record_step(void *context, int epoch, int64_t step, int64_t steps, const ct_tensor *loss)
{
    record_loss(((run_losses *)context)->steps, epoch, step, steps, loss);
}

static void record_epoch(void *context, const ct_train_epoch *e)
{
    assert_in_range(e->epoch, 1, EPOCHS);
    ((run_losses *)context)->epochs[e->epoch - 1] = e->loss;
}

static ct_module *train_reporting(const ct_train_data *data, ct_train_config config, run_losses *losses,
                                  ct_train_result *result)
{
    ct_manual_seed(config.seed);
    ct_module *model = ct_train_model_create(config.model, data->features, data->classes);
    assert_non_null(model);
    ct_train_observer observer = {.on_step = record_step, .on_epoch = record_epoch, .context = losses};
    if (ct_train_run(model, data, &config, &observer, result) != CT_OK) fail_msg("%s", ct_train_error_message());
    ct_train_state_free(&result->state);
    return model;
}

static ct_module *train(const ct_train_data *data, ct_train_config config, step_losses *losses,
                        ct_train_result *result)
{
    ct_manual_seed(config.seed);
    ct_module *model = ct_train_model_create(config.model, data->features, data->classes);
    assert_non_null(model);
    ct_train_observer observer = {.on_step = record_loss, .context = losses};
    if (ct_train_run(model, data, &config, &observer, result) != CT_OK) fail_msg("%s", ct_train_error_message());
    ct_train_state_free(&result->state);
    return model;
}

static void expect_same_parameters(const ct_module *a, const ct_module *b)
{
    ct_named_tensors *pa = ct_module_named_parameters(a), *pb = ct_module_named_parameters(b);
    assert_int_equal(pa->count, pb->count);
    for (int64_t i = 0; i < pa->count; i++) {
        const ct_tensor *ta = pa->tensors[i], *tb = pb->tensors[i];
        int64_t n = ct_numel(ta);
        float *va = calloc((size_t)n, sizeof *va), *vb = calloc((size_t)n, sizeof *vb);
        assert_int_equal(ct_tensor_to_array(ta, va, (size_t)n * sizeof *va), CT_OK);
        assert_int_equal(ct_tensor_to_array(tb, vb, (size_t)n * sizeof *vb), CT_OK);
        if (memcmp(va, vb, (size_t)n * sizeof *va) != 0)
            fail_msg("%s differs between the eager and the replayed run", pa->names[i]);
        free(va);
        free(vb);
    }
    ct_named_tensors_free(pa);
    ct_named_tensors_free(pb);
}

/* SGD with momentum, and Adam (the default), made capturable by --graph, each also with the
 * gradients clipped (0.25: every step clips), and Adam with the forward pass under bfloat16
 * autocast: the same bits. */
static void graph_run_equals_eager_run(ct_device device)
{
    ct_train_data data;
    if (ct_train_data_load(CTORCH_DIGITS_PATH, 0, &data) != CT_OK) fail_msg("%s", ct_train_error_message());
    static step_losses eager_losses, graph_losses;
    ct_train_result eager, replayed;
    for (int k = 0; k < 7; k++) {
        ct_train_optimizer optimizer = k % 2 == 0 ? CT_TRAIN_SGD : CT_TRAIN_ADAM;
        if (k == 4) optimizer = CT_TRAIN_ADAM;
        ct_train_config with_graph = config_with(device, optimizer, true, false);
        ct_train_config without = config_with(device, optimizer, false, false);
        with_graph.clip_grad = without.clip_grad = k == 2 || k == 3 ? 0.25 : 0.0; /* clipped on the device */
        with_graph.amp = without.amp = k == 4 ? CT_BF16 : CT_F32;
        if (k >= 5) /* the rate halves after epoch 1 */
            with_graph.schedule = without.schedule = (ct_train_schedule){.kind = CT_TRAIN_SCHEDULE_STEP, .epochs = 1,
                                                                         .value = 0.5};
        eager_losses.count = graph_losses.count = 0;
        run_losses eager_run = {.steps = &eager_losses}, graph_run = {.steps = &graph_losses};
        ct_module *a = train_reporting(&data, without, &eager_run, &eager);
        ct_module *b = train_reporting(&data, with_graph, &graph_run, &replayed);
        assert_int_equal(graph_losses.count, eager_losses.count);
        for (int64_t i = 0; i < eager_losses.count; i++)
            if (graph_losses.values[i] != eager_losses.values[i])
                fail_msg("run %d, step %lld: loss %.9g replayed, %.9g eager", k, (long long)i,
                         graph_losses.values[i], eager_losses.values[i]);
        expect_same_parameters(a, b);
        assert_true(eager.test_accuracy > 0.85);
        assert_float_equal(replayed.test_accuracy, eager.test_accuracy, 0.0);
        /* 1437 samples in batches of 32: each epoch ends with a batch of 29, run eagerly */
        for (int e = 0; e < EPOCHS; e++)
            if (graph_run.epochs[e] != eager_run.epochs[e])
                fail_msg("run %d, epoch %d: loss %.17g replayed, %.17g eager", k, e + 1, graph_run.epochs[e],
                         eager_run.epochs[e]);
        assert_true(replayed.final_loss == eager.final_loss);
        ct_module_release(a);
        ct_module_release(b);
    }

    /* --drop-last: 1437 samples in batches of 32 leave 29 out of each epoch. */
    graph_losses.count = 0;
    ct_module *c = train(&data, sgd_config(device, true, true), &graph_losses, &replayed);
    assert_int_equal(graph_losses.count, EPOCHS * (ct_dataset_size(data.train) / 32));
    assert_true(replayed.test_accuracy > 0.85);
    ct_module_release(c);
    ct_train_data_free(&data);
}

static void graph_run_equals_eager_run_on_the_cpu(void **state)
{
    (void)state;
    graph_run_equals_eager_run(CT_DEVICE_CPU);
}

static void graph_run_equals_eager_run_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    graph_run_equals_eager_run((ct_device){CT_OPENCL, 0});
}

static void options_a_replay_cannot_follow_are_refused(void **state)
{
    (void)state;
    ct_train_data data;
    if (ct_train_data_load(CTORCH_DIGITS_PATH, 0, &data) != CT_OK) fail_msg("%s", ct_train_error_message());
    for (int k = 0; k < 2; k++) {
        ct_train_config config = sgd_config(CT_DEVICE_CPU, true, false);
        if (k == 0) config.amp = CT_F16;
        if (k == 1) config.schedule.kind = CT_TRAIN_SCHEDULE_ONECYCLE;
        ct_module *model = ct_train_model_create(config.model, data.features, data.classes);
        ct_train_result result;
        assert_int_equal(ct_train_run(model, &data, &config, NULL, &result), CT_ERR_INVALID_ARGUMENT);
        const char *needed[2] = {"needs no --amp fp16", "needs no --lr-schedule that changes the rate every"};
        if (!strstr(ct_train_error_message(), needed[k]))
            fail_msg("message '%s' lacks '%s'", ct_train_error_message(), needed[k]);
        ct_module_release(model);
    }
    ct_train_data_free(&data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(graph_run_equals_eager_run_on_the_cpu),
        cmocka_unit_test(graph_run_equals_eager_run_on_opencl),
        cmocka_unit_test(options_a_replay_cannot_follow_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
