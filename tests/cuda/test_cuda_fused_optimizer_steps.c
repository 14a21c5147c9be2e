/* Fused optimizer steps on the stand-in CUDA devices: the multi-tensor kernels' 32 buffer
 * arguments reach the kernel, the result is the same bits as steps per parameter, and a step is
 * a constant number of launches (see optim/fused_steps.h); loss scaling joined in. */
#include "optim/param_group_steps.h"
#include "optim/unscaled_steps.h"
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

/* Two parameter groups equal PyTorch's numbers, every way of stepping (optim/param_group_steps.h). */
static void param_groups_equal_pytorch(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    group_check_against_pytorch(CUDA0);
}

/* Loss scaling joined into the step (see optim/unscaled_steps.h). */
static void unscaled_steps(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    unscaled_check_same_bits(CUDA0);
    unscaled_check_skips(CUDA0);
    unscaled_check_launches(CUDA0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_bits_as_steps_per_parameter),
        cmocka_unit_test(launches_per_step_are_constant),
        cmocka_unit_test(param_groups_equal_pytorch),
        cmocka_unit_test(unscaled_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
