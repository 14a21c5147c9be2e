/* `ctorch train`'s training code gives the same run on the cpu and on opencl:0 with the same
 * seed: the loss of every step of 3 epochs agrees within 1e-4 relative (the mlp on the digits,
 * the cnn on part of them); and a checkpoint saved from opencl:0 loads on the cpu through a
 * map_location and tests to the same accuracy there. With DataParallel over opencl:0 and
 * opencl:1 (`ctorch train --data-parallel`) every step's loss of 2 epochs agrees with opencl:0's
 * alone within 1e-4 relative, and the model tests far above chance. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "tool_test.h"
#include "train.h"

#define OPENCL0 ((ct_device){CT_OPENCL, 0})
#define OPENCL1 ((ct_device){CT_OPENCL, 1})

enum { EPOCHS = 3, DP_EPOCHS = 2, CNN_SAMPLES = 480 };

static bool have_opencl(void) { return ct_device_count(CT_OPENCL) > 0; }
static bool have_two_opencl_devices(void) { return ct_device_count(CT_OPENCL) >= 2; }

static void load_digits(ct_train_data *data)
{
    if (ct_train_data_load(CTORCH_DIGITS_PATH, 0, data) != CT_OK) fail_msg("%s", ct_train_error_message());
}

/* The first n training samples of data, as the training set (the test set stays). */
static void keep_first_training_samples(ct_train_data *data, int64_t n)
{
    ct_scope_push();
    ct_tensor *x = ct_narrow(ct_dataset_features(data->train), 0, 0, n);
    ct_tensor *y = ct_narrow(ct_dataset_labels(data->train), 0, 0, n);
    ct_dataset *part = ct_dataset_from_tensors(x, y);
    assert_non_null(part);
    ct_scope_pop();
    ct_dataset_free(data->train);
    data->train = part;
}

/* Trains a new model of kind with the default settings but epochs epochs on devices[0], with
 * DataParallel over devices[0..count) when count > 1, recording every step's loss; returns the
 * model and its test accuracy. */
static ct_module *train_over(ct_train_model kind, const ct_train_data *data, int epochs, const ct_device *devices,
                             int count, step_losses *losses, double *accuracy)
{
    ct_train_config config = ct_train_config_default(kind);
    config.epochs = epochs;
    config.device = devices[0];
    if (count > 1) {
        config.data_parallel_count = count;
        for (int i = 0; i < count; i++) config.data_parallel[i] = devices[i];
    }
    ct_manual_seed(config.seed);
    ct_module *model = ct_train_model_create(kind, data->features, data->classes);
    if (!model) fail_msg("%s", ct_train_error_message());
    losses->count = 0;
    ct_train_observer observer = {.on_step = record_loss, .context = losses};
    ct_train_result result;
    if (ct_train_run(model, data, &config, &observer, &result) != CT_OK) fail_msg("%s", ct_train_error_message());
    ct_train_state_free(&result.state);
    *accuracy = result.test_accuracy;
    return model;
}

/* Trains on device alone for EPOCHS epochs. */
static ct_module *train_on(ct_train_model kind, const ct_train_data *data, ct_device device, step_losses *losses,
                           double *accuracy)
{
    return train_over(kind, data, EPOCHS, &device, 1, losses, accuracy);
}

static void assert_same_losses_of(const step_losses *reference, const step_losses *other, const char *model,
                                  const char *reference_name, const char *other_name)
{
    assert_int_equal(other->count, reference->count);
    for (int64_t i = 0; i < reference->count; i++)
        if (!(fabs(other->values[i] - reference->values[i]) <= 1e-4 * fabs(reference->values[i])))
            fail_msg("%s, step %lld of %lld: %s %.9g, %s %.9g", model, (long long)i, (long long)reference->count,
                     other_name, other->values[i], reference_name, reference->values[i]);
}

static void assert_same_losses(const step_losses *cpu, const step_losses *device, const char *model)
{
    assert_same_losses_of(cpu, device, model, "cpu", "opencl:0");
}

static step_losses on_cpu, on_device;

static void the_mlp_trains_the_same_on_cpu_and_opencl(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    ct_train_data data;
    load_digits(&data);
    double cpu_accuracy, device_accuracy;
    ct_module_release(train_on(CT_TRAIN_MLP, &data, CT_DEVICE_CPU, &on_cpu, &cpu_accuracy));
    ct_module_release(train_on(CT_TRAIN_MLP, &data, OPENCL0, &on_device, &device_accuracy));
    assert_true(on_cpu.count >= EPOCHS * 40); /* 1437 samples in batches of 32: 45 steps an epoch */
    assert_same_losses(&on_cpu, &on_device, "mlp");
    ct_train_data_free(&data);
}

static void the_cnn_trains_the_same_on_cpu_and_opencl(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    ct_train_data data;
    load_digits(&data);
    keep_first_training_samples(&data, CNN_SAMPLES);
    double cpu_accuracy, device_accuracy;
    ct_module_release(train_on(CT_TRAIN_CNN, &data, CT_DEVICE_CPU, &on_cpu, &cpu_accuracy));
    ct_module_release(train_on(CT_TRAIN_CNN, &data, OPENCL0, &on_device, &device_accuracy));
    assert_int_equal(on_cpu.count, EPOCHS * CNN_SAMPLES / 32);
    assert_same_losses(&on_cpu, &on_device, "cnn");
    ct_train_data_free(&data);
}

static void a_checkpoint_from_opencl_tests_the_same_on_the_cpu(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    ct_train_data data;
    load_digits(&data);
    double device_accuracy;
    ct_module *model = train_on(CT_TRAIN_MLP, &data, OPENCL0, &on_device, &device_accuracy);
    char path[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_equivalence_");
    assert_int_equal(ct_train_checkpoint_save(model, CT_TRAIN_MLP, data.features, data.classes, 0, path), CT_OK);

    /* Saved from opencl:0: without a map the tensors load there, through the map onto the cpu. */
    ct_state_dict *kept = ct_load(path, NULL), *mapped = ct_load(path, "opencl:0=cpu");
    assert_non_null(kept);
    assert_non_null(mapped);
    assert_string_equal(ct_state_dict_metadata(kept, "ctorch.device.0.weight"), "opencl:0");
    for (int64_t i = 0; i < ct_state_dict_count(mapped); i++) {
        ct_tensor *k = ct_state_dict_tensor_at(kept, i), *m = ct_state_dict_tensor_at(mapped, i);
        assert_true(ct_device_equal(ct_tensor_device(k), OPENCL0));
        assert_true(ct_device_equal(ct_tensor_device(m), CT_DEVICE_CPU));
        ct_release(k);
        ct_release(m);
    }
    ct_state_dict_free(kept);
    ct_state_dict_free(mapped);

    ct_train_checkpoint checkpoint;
    if (ct_train_checkpoint_load(path, "opencl:0=cpu", &checkpoint) != CT_OK)
        fail_msg("%s", ct_train_error_message());
    assert_int_equal(checkpoint.kind, CT_TRAIN_MLP);
    assert_true(ct_device_equal(ct_module_device(checkpoint.model), CT_DEVICE_CPU));
    double cpu_accuracy;
    assert_int_equal(ct_train_evaluate(checkpoint.model, data.test, CT_DEVICE_CPU, &cpu_accuracy), CT_OK);
    if (cpu_accuracy != device_accuracy)
        fail_msg("tested on opencl:0 %.6f, on the cpu after loading %.6f", device_accuracy, cpu_accuracy);
    ct_train_checkpoint_free(&checkpoint);
    ct_module_release(model);
    unlink(path);
    ct_train_data_free(&data);
}

/* DataParallel over opencl:0 and opencl:1 against opencl:0 alone, 2 epochs of kind on data: the
 * same losses, and a test accuracy above min_accuracy (chance is 0.1) within one sample of the
 * single device's. */
static void assert_data_parallel_trains_the_same(ct_train_model kind, const ct_train_data *data, int64_t steps,
                                                 double min_accuracy)
{
    static step_losses alone, split;
    double alone_accuracy, split_accuracy;
    const ct_device both[2] = {OPENCL0, OPENCL1};
    ct_module_release(train_over(kind, data, DP_EPOCHS, both, 1, &alone, &alone_accuracy));
    ct_module *model = train_over(kind, data, DP_EPOCHS, both, 2, &split, &split_accuracy);
    assert_int_equal(alone.count, steps);
    assert_same_losses_of(&alone, &split, ct_train_model_name(kind), "opencl:0", "DataParallel over opencl:0,1");
    double one_sample = 1.0 / (double)ct_dataset_size(data->test);
    if (!(split_accuracy > min_accuracy && fabs(split_accuracy - alone_accuracy) <= one_sample + 1e-12))
        fail_msg("%s tests at %.4f under DataParallel, %.4f on opencl:0 alone; want above %.2f",
                 ct_train_model_name(kind), split_accuracy, alone_accuracy, min_accuracy);
    /* The caller's model is the trained one, plain and on the first device. */
    assert_true(ct_device_equal(ct_module_device(model), OPENCL0));
    ct_state_dict *sd = ct_module_state_dict(model, NULL);
    assert_non_null(sd);
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++)
        assert_null(strstr(ct_state_dict_name_at(sd, i), "module."));
    ct_state_dict_free(sd);
    ct_module_release(model);
}

static void the_mlp_trains_the_same_with_data_parallel_over_two_devices(void **state)
{
    (void)state;
    if (!have_two_opencl_devices()) skip();
    ct_train_data data;
    load_digits(&data);
    /* 1437 samples in batches of 32: 44 of 32 (16 + 16 on the devices) and one of 29 (15 + 14). */
    assert_data_parallel_trains_the_same(CT_TRAIN_MLP, &data, DP_EPOCHS * 45, 0.8);
    ct_train_data_free(&data);
}

static void the_cnn_trains_the_same_with_data_parallel_over_two_devices(void **state)
{
    (void)state;
    if (!have_two_opencl_devices()) skip();
    ct_train_data data;
    load_digits(&data);
    keep_first_training_samples(&data, CNN_SAMPLES);
    /* 480 samples, 2 epochs: the cnn has only begun (about 0.47). */
    assert_data_parallel_trains_the_same(CT_TRAIN_CNN, &data, DP_EPOCHS * CNN_SAMPLES / 32, 0.3);
    ct_train_data_free(&data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_mlp_trains_the_same_on_cpu_and_opencl),
        cmocka_unit_test(the_cnn_trains_the_same_on_cpu_and_opencl),
        cmocka_unit_test(a_checkpoint_from_opencl_tests_the_same_on_the_cpu),
        cmocka_unit_test(the_mlp_trains_the_same_with_data_parallel_over_two_devices),
        cmocka_unit_test(the_cnn_trains_the_same_with_data_parallel_over_two_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
