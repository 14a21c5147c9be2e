/* A tiny GPT made by ct_gpt gives nanoGPT's (PyTorch's) logits, loss, every gradient and the
 * losses of 10 AdamW steps with nanoGPT's parameter groups (tests/models/fixtures/, made by the
 * script there), with a padded vocabulary, on the CPU and each OpenCL device, with the fused and
 * the composed attention. The CUDA stand-in's twin is tests/cuda/test_cuda_gpt_matches_pytorch.c. */
#include <stdio.h>

#include "support/devices.h"
#include "support/gpt_fixture.h"
#include "test_common.h"

#define FIXTURE CTORCH_SOURCE_DIR "/tests/models/fixtures/gpt.safetensors"

static void check_every_device(const char *attention_path)
{
    setenv("CTORCH_SDPA", attention_path, 1);
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        char failure[512], name[32];
        ct_device_format(devices[d], name, sizeof name);
        if (!ct_test_gpt_matches_pytorch(FIXTURE, devices[d], failure, sizeof failure))
            fail_msg("%s, attention %s: %s", name, attention_path, failure);
    }
    unsetenv("CTORCH_SDPA");
}

static void the_gpt_with_fused_attention_matches_pytorch(void **state)
{
    (void)state;
    check_every_device("fused");
}

static void the_gpt_with_composed_attention_matches_pytorch(void **state)
{
    (void)state;
    check_every_device("math");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_gpt_with_fused_attention_matches_pytorch),
        cmocka_unit_test(the_gpt_with_composed_attention_matches_pytorch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
