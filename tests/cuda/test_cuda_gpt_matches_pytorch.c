/* On the stand-in CUDA devices: the tiny GPT of tests/models/fixtures/ (ct_gpt, a padded
 * vocabulary, fused and composed attention) gives nanoGPT's logits, loss, gradients and the
 * losses of 10 AdamW steps, as on the CPU and OpenCL (tests/models/test_gpt_matches_pytorch.c). */
#include <stdlib.h>

#include "standin_test.h"
#include "support/gpt_fixture.h"

#define FIXTURE CTORCH_SOURCE_DIR "/tests/models/fixtures/gpt.safetensors"

static void the_gpt_matches_pytorch_on_cuda(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    const char *paths[2] = {"fused", "math"};
    for (int p = 0; p < 2; p++) {
        setenv("CTORCH_SDPA", paths[p], 1);
        char failure[512];
        if (!ct_test_gpt_matches_pytorch(FIXTURE, CUDA0, failure, sizeof failure))
            fail_msg("cuda:0, attention %s: %s", paths[p], failure);
    }
    unsetenv("CTORCH_SDPA");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(the_gpt_matches_pytorch_on_cuda)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
