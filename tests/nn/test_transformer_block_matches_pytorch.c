/* One small GPT-2 block built from ct_embedding, ct_layer_norm, causal
 * ct_scaled_dot_product_attention (fused, and composed) and ct_gelu_tanh gives PyTorch's logits,
 * loss and every gradient (tests/nn/fixtures/, made by the script there) on the CPU and each
 * OpenCL device. The CUDA stand-in's twin is tests/cuda/test_cuda_transformer_block_matches_pytorch.c. */
#include <stdio.h>

#include "support/devices.h"
#include "support/transformer_block_fixture.h"
#include "test_common.h"

#define FIXTURE CTORCH_SOURCE_DIR "/tests/nn/fixtures/transformer_block.safetensors"

static void check_every_device(const char *attention_path)
{
    setenv("CTORCH_SDPA", attention_path, 1);
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        char failure[512], name[32];
        ct_device_format(devices[d], name, sizeof name);
        if (!ct_test_transformer_block_matches_pytorch(FIXTURE, devices[d], failure, sizeof failure))
            fail_msg("%s, attention %s: %s", name, attention_path, failure);
    }
    unsetenv("CTORCH_SDPA");
}

static void the_fused_attention_block_matches_pytorch(void **state)
{
    (void)state;
    check_every_device("fused");
}

static void the_composed_attention_block_matches_pytorch(void **state)
{
    (void)state;
    check_every_device("math");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_fused_attention_block_matches_pytorch),
        cmocka_unit_test(the_composed_attention_block_matches_pytorch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
