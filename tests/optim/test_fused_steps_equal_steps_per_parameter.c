/* Fused optimizer steps (a few tensors per launch) against steps per parameter: the same bits,
 * and a constant number of launches per step, on the CPU and on every OpenCL device (PoCL:
 * POCL_DEVICES="pthread pthread" gives two). See optim/fused_steps.h. */
#include "optim/fused_steps.h"

static void same_bits_on_the_cpu(void **state)
{
    (void)state;
    fused_check_same_bits(CT_DEVICE_CPU, CT_DEVICE_CPU);
}

static void same_bits_on_opencl(void **state)
{
    (void)state;
    int count = ct_device_count(CT_OPENCL);
    if (count == 0) skip();
    for (int i = 0; i < count; i++) {
        ct_device device = {CT_OPENCL, i};
        fused_check_same_bits(device, device);
    }
}

/* One optimizer over parameters of several devices: a group (and its launches) per device. */
static void same_bits_over_several_devices(void **state)
{
    (void)state;
    int count = ct_device_count(CT_OPENCL);
    if (count == 0) skip();
    fused_check_same_bits(CT_DEVICE_CPU, (ct_device){CT_OPENCL, 0});
    if (count > 1) fused_check_same_bits((ct_device){CT_OPENCL, 0}, (ct_device){CT_OPENCL, 1});
}

static void launches_per_step_are_constant_on_the_cpu(void **state)
{
    (void)state;
    fused_check_launch_counts(CT_DEVICE_CPU);
}

static void launches_per_step_are_constant_on_opencl(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    fused_check_launch_counts((ct_device){CT_OPENCL, 0});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_bits_on_the_cpu),
        cmocka_unit_test(same_bits_on_opencl),
        cmocka_unit_test(same_bits_over_several_devices),
        cmocka_unit_test(launches_per_step_are_constant_on_the_cpu),
        cmocka_unit_test(launches_per_step_are_constant_on_opencl),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
