/* On the stand-in CUDA devices: the small GPT-2 block of tests/nn/fixtures/ (embedding,
 * LayerNorm, causal attention fused and composed, tanh-GELU MLP) gives PyTorch's logits, loss and
 * gradients, as on the CPU and OpenCL (tests/nn/test_transformer_block_matches_pytorch.c). */
#include <stdlib.h>

#include "standin_test.h"
#include "support/transformer_block_fixture.h"

#define FIXTURE CTORCH_SOURCE_DIR "/tests/nn/fixtures/transformer_block.safetensors"

static void the_block_matches_pytorch_on_cuda(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    const char *paths[2] = {"fused", "math"};
    for (int p = 0; p < 2; p++) {
        setenv("CTORCH_SDPA", paths[p], 1);
        char failure[512];
        if (!ct_test_transformer_block_matches_pytorch(FIXTURE, CUDA0, failure, sizeof failure))
            fail_msg("cuda:0, attention %s: %s", paths[p], failure);
    }
    unsetenv("CTORCH_SDPA");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(the_block_matches_pytorch_on_cuda)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
