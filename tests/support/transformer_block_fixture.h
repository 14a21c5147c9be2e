/* One small GPT-2-style transformer block built from ctorch's ops, checked against the forward
 * outputs and gradients PyTorch computed for it (tests/nn/fixtures/transformer_block.safetensors,
 * made by make_transformer_block_fixture.py beside it): the test of the transformer ops together,
 * as llm.c's test_gpt2 checks its model against PyTorch's debug state. */
#ifndef CT_TEST_TRANSFORMER_BLOCK_FIXTURE_H
#define CT_TEST_TRANSFORMER_BLOCK_FIXTURE_H

#include "ctorch.h"

/* Loads the fixture (at fixture_path) onto device, runs the block's forward and backward there,
 * and compares the logits, the loss and every gradient with PyTorch's. Returns true when all
 * agree to float32 rounding; otherwise false with what differed (the tensor, the element, both
 * values) in failure[capacity]. */
bool ct_test_transformer_block_matches_pytorch(const char *fixture_path, ct_device device, char *failure,
                                               size_t capacity);

#endif
