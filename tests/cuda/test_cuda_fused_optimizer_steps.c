/* Fused optimizer steps on the stand-in CUDA devices: the multi-tensor kernels' 32 buffer
 * arguments reach the kernel, the result is the same bits as steps per parameter, and a step is
 * a constant number of launches (see optim/fused_steps.h). */
#include "optim/fused_steps.h"
#include "standin_test.h"

static void same_bits_as_steps_per_parameter(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(2);
    fused_check_same_bits(CUDA0, CUDA0);
    fused_check_same_bits(CUDA1, CUDA1);
    fused_check_same_bits(CUDA0, CUDA1); /* one optimizer, a launch group per device */
}

static void launches_per_step_are_constant(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    fused_check_launch_counts(CUDA0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_bits_as_steps_per_parameter),
        cmocka_unit_test(launches_per_step_are_constant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
