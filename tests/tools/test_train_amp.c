/* `ctorch train --amp`: the digits models trained under bfloat16 and float16 autocast (float16
 * with the gradient scaler) test within 1 point of float32's accuracy, on the CPU and on
 * opencl:0; the parameters stay float32; --amp with DataParallel is refused by name. */
#include <math.h>
#include <stdio.h>

#include "test_common.h"
#include "train.h"

static void load_digits(ct_train_data *data)
{
    if (ct_train_data_load(CTORCH_DIGITS_PATH, 0, data) != CT_OK) fail_msg("%s", ct_train_error_message());
}

static double accuracy_of(ct_train_model kind, const ct_train_data *data, ct_device device, ct_dtype amp, int epochs)
{
    ct_train_config config = ct_train_config_default(kind);
    config.device = device;
    config.amp = amp;
    config.epochs = epochs;
    ct_manual_seed(config.seed);
    ct_module *model = ct_train_model_create(kind, data->features, data->classes);
    assert_non_null(model);
    ct_train_result result;
    if (ct_train_run(model, data, &config, NULL, &result) != CT_OK)
        fail_msg("--amp %s on device type %d: %s", ct_train_amp_name(amp), device.type, ct_train_error_message());
    ct_tensor *weight = ct_module_parameter(model, "0.weight");
    if (kind == CT_TRAIN_MLP) assert_int_equal(ct_tensor_dtype(weight), CT_F32); /* master weights */
    ct_release(weight);
    ct_train_state_free(&result.state);
    ct_module_release(model);
    return result.test_accuracy;
}

static void check_device(ct_train_model kind, ct_device device, int epochs)
{
    ct_train_data data = {0};
    load_digits(&data);
    double full = accuracy_of(kind, &data, device, CT_F32, epochs);
    double bf16 = accuracy_of(kind, &data, device, CT_BF16, epochs);
    double fp16 = accuracy_of(kind, &data, device, CT_F16, epochs);
    printf("%s on device type %d: float32 %.4f, bf16 %.4f, fp16 %.4f\n", ct_train_model_name(kind), device.type,
           full, bf16, fp16);
    assert_true(full > 0.9);
    assert_true(fabs(bf16 - full) <= 0.01 + 1e-9);
    assert_true(fabs(fp16 - full) <= 0.01 + 1e-9);
    ct_train_data_free(&data);
}

static void mixed_precision_reaches_float32_accuracy_on_the_cpu(void **state)
{
    (void)state;
    check_device(CT_TRAIN_MLP, CT_DEVICE_CPU, 30);
    check_device(CT_TRAIN_CNN, CT_DEVICE_CPU, 20);
}

static void mixed_precision_reaches_float32_accuracy_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 1) {
        printf("no OpenCL device: skipped\n");
        skip();
    }
    check_device(CT_TRAIN_MLP, (ct_device){CT_OPENCL, 0}, 30);
}

static void amp_with_data_parallel_is_refused(void **state)
{
    (void)state;
    ct_train_data data = {0};
    load_digits(&data);
    ct_train_config config = ct_train_config_default(CT_TRAIN_MLP);
    config.amp = CT_BF16;
    config.epochs = 1;
    config.data_parallel_count = 2;
    config.data_parallel[0] = config.data_parallel[1] = CT_DEVICE_CPU;
    config.data_parallel[1].index = 0;
    ct_module *model = ct_train_model_create(CT_TRAIN_MLP, data.features, data.classes);
    ct_train_result result;
    assert_int_equal(ct_train_run(model, &data, &config, NULL, &result), CT_ERR_INVALID_ARGUMENT);
    if (!strstr(ct_train_error_message(), "--amp bf16 with DataParallel"))
        fail_msg("message: %s", ct_train_error_message());
    ct_module_release(model);
    ct_train_data_free(&data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mixed_precision_reaches_float32_accuracy_on_the_cpu),
        cmocka_unit_test(mixed_precision_reaches_float32_accuracy_on_opencl),
        cmocka_unit_test(amp_with_data_parallel_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
