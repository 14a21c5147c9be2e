/* The tiny GPT of tests/models/fixtures/gpt.safetensors (made by make_gpt_fixture.py beside it,
 * nanoGPT's model in PyTorch) built with ct_gpt and checked against PyTorch's logits, loss, every
 * gradient and the losses of 10 AdamW steps with nanoGPT's parameter groups. */
#ifndef CT_TEST_GPT_FIXTURE_H
#define CT_TEST_GPT_FIXTURE_H

#include "ctorch.h"

/* Loads the fixture onto device into a ct_gpt, runs one forward and backward there and compares
 * the logits, the loss and every gradient with PyTorch's, then trains 10 AdamW steps
 * (ct_gpt_configure_optimizers) comparing each step's loss. true when all agree (float32: the
 * losses within relative 1e-4); otherwise false with what differed in failure[capacity]. */
bool ct_test_gpt_matches_pytorch(const char *fixture_path, ct_device device, char *failure, size_t capacity);

#endif
