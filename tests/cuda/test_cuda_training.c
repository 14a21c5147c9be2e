/* Training on cuda:0 of the stand-in equals training on the CPU: the same small classifier
 * (Linear, ReLU, Linear, cross-entropy, Adam) from the same seed, moved to the device in place,
 * takes the same steps on the same batches (kernels from NVRTC's PTX, run as their C build;
 * products through the stand-in cuBLAS), and once the loop is warm a step asks the driver for
 * no memory (the caching allocator serves it). DataParallel over cuda:0 and cuda:1 gives the
 * gradients of one device. */
#include <math.h>

#include "standin_test.h"

#include "nn/nn_test.h"

enum { IN = 12, HIDDEN = 32, CLASSES = 5, ROWS = 16, MAX_VALUES = 4096 };

static ct_module *make_model(ct_device device)
{
    ct_manual_seed(3);
    ct_module *m = ct_sequential((ct_module *[]){ct_linear(IN, HIDDEN, true), ct_relu_module(),
                                                 ct_linear(HIDDEN, CLASSES, true)}, 3);
    assert_non_null(m);
    assert_int_equal(ct_module_to(m, device), CT_OK);
    return m;
}

/* A batch drawn on the CPU from seed: inputs and class labels. */
static void make_batch(uint64_t seed, ct_tensor **x, ct_tensor **labels)
{
    ct_manual_seed(seed);
    *x = ct_randn((int64_t[]){ROWS, IN}, 2, CT_F32, CT_DEVICE_CPU);
    *labels = ct_randint(0, CLASSES, (int64_t[]){ROWS}, 1, CT_I64, CT_DEVICE_CPU);
    assert_non_null(*x);
    assert_non_null(*labels);
}

/* One step on the model's device: the loss, on the host. */
static double step(ct_module *forward, ct_optimizer *optimizer, ct_device device, uint64_t seed)
{
    ct_scope_push();
    ct_tensor *x, *labels;
    make_batch(seed, &x, &labels);
    if (optimizer) ct_optimizer_zero_grad(optimizer);
    ct_tensor *loss = ct_cross_entropy(ct_module_forward(forward, ct_to(x, device)),
                                       ct_to(labels, device), 0.0);
    if (!loss) fail_msg("forward: %s", ct_last_error_message());
    assert_int_equal(ct_backward(loss), CT_OK);
    if (optimizer) assert_int_equal(ct_optimizer_step(optimizer), CT_OK);
    double value = 0;
    assert_int_equal(ct_item(loss, &value), CT_OK);
    ct_release(x), ct_release(labels);
    ct_scope_pop();
    return value;
}

static void test_training_steps_on_cuda_equal_the_cpus(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_module *on_cpu = make_model(CT_DEVICE_CPU), *on_gpu = make_model(CUDA0);
    ct_adam_options adam = ct_adam_options_default(1e-2);
    ct_optimizer *cpu_opt = ct_optim_adam(on_cpu, &adam), *gpu_opt = ct_optim_adam(on_gpu, &adam);
    assert_non_null(cpu_opt);
    assert_non_null(gpu_opt);
    double want[MAX_VALUES], got[MAX_VALUES];
    long driver_allocations_last_step = -1;
    for (int s = 0; s < 4; s++) {
        ctorch_standin_counts before = standin_counts();
        double gpu_loss = step(on_gpu, gpu_opt, CUDA0, 40 + (uint64_t)s);
        driver_allocations_last_step = standin_counts().mem_alloc - before.mem_alloc;
        double cpu_loss = step(on_cpu, cpu_opt, CT_DEVICE_CPU, 40 + (uint64_t)s);
        if (fabs(gpu_loss - cpu_loss) > 1e-5 * fabs(cpu_loss))
            fail_msg("step %d: loss %.9g on cuda:0, %.9g on the cpu", s, gpu_loss, cpu_loss);
    }
    int64_t n = module_parameter_values(on_cpu, false, want, MAX_VALUES);
    assert_int_equal(module_parameter_values(on_gpu, false, got, MAX_VALUES), n);
    assert_close_to_scale(got, want, n, 1e-5, "parameter after 4 Adam steps");
    assert_int_equal(driver_allocations_last_step, 0); /* a warm step allocates from the cache */
    ct_optimizer_free(cpu_opt), ct_optimizer_free(gpu_opt);
    ct_module_release(on_cpu), ct_module_release(on_gpu);
}

static void test_data_parallel_over_two_devices_gives_the_gradients_of_one(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(2);
    ct_module *plain = make_model(CT_DEVICE_CPU), *wrapped = make_model(CUDA0);
    const ct_device devices[2] = {CUDA0, CUDA1};
    ct_module *dp = ct_data_parallel(wrapped, devices, 2, CUDA0);
    if (!dp) fail_msg("ct_data_parallel: %s", ct_last_error_message());
    ctorch_standin_counts before = standin_counts();
    step(plain, NULL, CT_DEVICE_CPU, 77);
    step(dp, NULL, CUDA0, 77);
    ctorch_standin_counts after = standin_counts();
    assert_true(after.launches > before.launches);
    double want[MAX_VALUES], got[MAX_VALUES];
    int64_t n = module_parameter_values(plain, true, want, MAX_VALUES);
    assert_int_equal(module_parameter_values(wrapped, true, got, MAX_VALUES), n);
    assert_close_to_scale(got, want, n, 1e-5, "gradient");
    ct_module_release(dp);
    ct_module_release(wrapped), ct_module_release(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_training_steps_on_cuda_equal_the_cpus),
        cmocka_unit_test(test_data_parallel_over_two_devices_gives_the_gradients_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
