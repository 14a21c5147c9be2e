/* ct_gpt_generate: sampling with a KV cache gives the ids that nanoGPT's full recomputation
 * gives for a seed (also once the sequence outgrows the block and the context slides), on every
 * device; padded ids never come out; top_k and temperature shape the draws as nanoGPT's; bad
 * prompts and settings are refused with a message naming them. */
#include <math.h>
#include <stdio.h>

#include "support/devices.h"
#include "test_common.h"

enum { VOCAB = 67, PADDED = 80, BLOCK = 12 };

static ct_gpt_config tiny(void)
{
    return (ct_gpt_config){.vocab_size = VOCAB, .padded_vocab_size = PADDED, .block_size = BLOCK, .n_layer = 2,
                           .n_head = 2, .n_embd = 16, .dropout = 0.0, .bias = true};
}

/* A tiny GPT whose weights are large enough for the distributions to be far from uniform. */
static ct_module *tiny_gpt(uint64_t seed)
{
    ct_manual_seed(seed);
    ct_gpt_config config = tiny();
    ct_module *gpt = ct_gpt(&config);
    assert_non_null(gpt);
    ct_named_tensors *params = ct_module_named_parameters(gpt);
    ct_no_grad_push();
    for (int64_t i = 0; i < params->count; i++)
        if (!strstr(params->names[i], ".ln_")) assert_int_equal(ct_mul_scalar_(params->tensors[i], 20.0), CT_OK);
    ct_no_grad_pop();
    ct_named_tensors_free(params);
    return gpt;
}

/* The ids after a row of logits [..., V] at the last position of a full forward of seq[0..n). */
static ct_tensor *last_logits(ct_module *gpt, const int64_t *seq, int64_t n)
{
    int64_t window = n < BLOCK ? n : BLOCK;
    const int64_t shape[2] = {1, window};
    ct_tensor *idx = ct_tensor_from_data(seq + n - window, CT_I64, shape, 2, ct_module_device(gpt));
    ct_tensor *logits = NULL;
    assert_int_equal(ct_gpt_forward(gpt, idx, NULL, &logits, NULL), CT_OK);
    return ct_to(ct_select(ct_select(logits, 0, 0), 0, window - 1), CT_DEVICE_CPU);
}

static void cached_sampling_equals_full_recomputation_on_every_device(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const int64_t prompt[3] = {5, 17, 42};
    enum { NEW = 20, TOTAL = 3 + NEW }; /* past the block of 12: the context slides */
    int64_t first[TOTAL];
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_module *gpt = tiny_gpt(7);
        assert_int_equal(ct_module_to(gpt, devices[d]), CT_OK);
        int64_t cached[TOTAL], full[TOTAL];
        assert_int_equal(ct_gpt_generate(gpt, prompt, 3, NEW, 1.0, 0, 1234, cached), CT_OK);
        assert_int_equal(ct_gpt_generate_uncached(gpt, prompt, 3, NEW, 1.0, 0, 1234, full), CT_OK);
        char name[32];
        ct_device_format(devices[d], name, sizeof name);
        for (int i = 0; i < TOTAL; i++)
            if (cached[i] != full[i]) fail_msg("%s: id %d: cached %lld, full %lld", name, i, (long long)cached[i],
                                               (long long)full[i]);
        assert_memory_equal(cached, prompt, sizeof prompt);
        if (d == 0) memcpy(first, cached, sizeof first);
        else assert_memory_equal(cached, first, sizeof first); /* the same ids on every device */
        int64_t again[TOTAL], other[TOTAL];
        assert_int_equal(ct_gpt_generate(gpt, prompt, 3, NEW, 1.0, 0, 1234, again), CT_OK);
        assert_memory_equal(again, cached, sizeof again);
        assert_int_equal(ct_gpt_generate(gpt, prompt, 3, NEW, 1.0, 0, 99, other), CT_OK);
        assert_memory_not_equal(other, cached, sizeof other);
        assert_true(ct_module_is_training(gpt)); /* its mode restored */
        ct_module_release(gpt);
        ct_scope_pop();
    }
}

/* With ln_f weight 0 and bias 1 every position's hidden state is all ones, so a token's logit is
 * the sum of its wte row: the padded rows, made large, would win every draw if they took part. */
static void padded_ids_never_come_out(void **state)
{
    (void)state;
    ct_scope_push();
    ct_module *gpt = tiny_gpt(3);
    ct_no_grad_push();
    assert_int_equal(ct_fill_(ct_module_parameter(gpt, "transformer.ln_f.weight"), 0.0), CT_OK);
    assert_int_equal(ct_fill_(ct_module_parameter(gpt, "transformer.ln_f.bias"), 1.0), CT_OK);
    ct_tensor *wte = ct_module_parameter(gpt, "transformer.wte.weight");
    assert_int_equal(ct_fill_(ct_narrow(wte, 0, VOCAB, PADDED - VOCAB), 100.0), CT_OK);
    ct_no_grad_pop();
    const int64_t prompt[1] = {1};
    int64_t out[1 + 40];
    assert_int_equal(ct_gpt_generate(gpt, prompt, 1, 40, 5.0, 0, 5, out), CT_OK);
    for (int i = 0; i < 41; i++) assert_in_range(out[i], 0, VOCAB - 1);
    ct_tensor *logits = last_logits(gpt, out, 5);
    assert_int_equal(ct_numel(logits), VOCAB); /* the forward's logits have no padded columns */
    ct_module_release(gpt);
    ct_scope_pop();
}

/* Ids ordered by their logit, largest first, into order[VOCAB]. */
static void rank(const ct_tensor *logits, int64_t *order)
{
    float v[VOCAB];
    assert_int_equal(ct_tensor_to_array(logits, v, sizeof v), CT_OK);
    for (int i = 0; i < VOCAB; i++) order[i] = i;
    for (int i = 0; i < VOCAB; i++)
        for (int j = i + 1; j < VOCAB; j++)
            if (v[order[j]] > v[order[i]]) {
                int64_t t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
}

static void top_k_keeps_the_k_largest_logits_and_temperature_sharpens(void **state)
{
    (void)state;
    ct_scope_push();
    ct_module *gpt = tiny_gpt(11);
    const int64_t prompt[2] = {3, 9};
    enum { NEW = 15, TOTAL = 2 + NEW };
    int64_t greedy[TOTAL], cold[TOTAL], top3[TOTAL];
    assert_int_equal(ct_gpt_generate(gpt, prompt, 2, NEW, 1.0, 1, 1, greedy), CT_OK);
    assert_int_equal(ct_gpt_generate(gpt, prompt, 2, NEW, 1e-4, 0, 2, cold), CT_OK);
    assert_int_equal(ct_gpt_generate(gpt, prompt, 2, NEW, 1.0, 3, 3, top3), CT_OK);
    assert_memory_equal(cold, greedy, sizeof cold); /* a temperature near 0 is the argmax */
    int distinct_top3 = 0;
    for (int n = 2; n < TOTAL; n++) {
        int64_t order[VOCAB];
        rank(last_logits(gpt, greedy, n), order);
        assert_int_equal(greedy[n], order[0]); /* top_k 1: the argmax of the full forward */
        rank(last_logits(gpt, top3, n), order);
        assert_true(top3[n] == order[0] || top3[n] == order[1] || top3[n] == order[2]);
        distinct_top3 += top3[n] != order[0];
    }
    assert_true(distinct_top3 > 0); /* top_k 3 does draw beyond the argmax */
    /* a high temperature flattens the draws: many more distinct ids than a low one */
    int64_t hot[1 + 60], warm[1 + 60];
    assert_int_equal(ct_gpt_generate(gpt, prompt, 1, 60, 50.0, 0, 4, hot), CT_OK);
    assert_int_equal(ct_gpt_generate(gpt, prompt, 1, 60, 0.05, 0, 4, warm), CT_OK);
    bool seen_hot[VOCAB] = {0}, seen_warm[VOCAB] = {0};
    int n_hot = 0, n_warm = 0;
    for (int i = 1; i < 61; i++) {
        n_hot += !seen_hot[hot[i]], seen_hot[hot[i]] = true;
        n_warm += !seen_warm[warm[i]], seen_warm[warm[i]] = true;
    }
    assert_true(n_hot > 2 * n_warm);
    ct_module_release(gpt);
    ct_scope_pop();
}

static void bad_prompts_and_settings_are_refused(void **state)
{
    (void)state;
    ct_scope_push();
    ct_module *gpt = tiny_gpt(1);
    int64_t prompt[BLOCK + 1] = {0}, out[BLOCK + 8];
    assert_int_equal(ct_gpt_generate(gpt, prompt, 0, 4, 1.0, 0, 1, out), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "the prompt has 0 tokens");
    assert_int_equal(ct_gpt_generate(gpt, prompt, BLOCK + 1, 4, 1.0, 0, 1, out), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "block_size (12)");
    prompt[2] = VOCAB;
    assert_int_equal(ct_gpt_generate(gpt, prompt, 3, 4, 1.0, 0, 1, out), CT_ERR_INDEX);
    assert_error(CT_ERR_INDEX, "prompt token 2 is 67");
    prompt[2] = -1;
    assert_int_equal(ct_gpt_generate(gpt, prompt, 3, 4, 1.0, 0, 1, out), CT_ERR_INDEX);
    assert_error(CT_ERR_INDEX, "prompt token 2 is -1");
    prompt[2] = 0;
    assert_int_equal(ct_gpt_generate(gpt, prompt, 3, 4, 0.0, 0, 1, out), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "temperature is 0");
    assert_int_equal(ct_gpt_generate(gpt, prompt, 3, 4, 1.0, -2, 1, out), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "top_k is -2");
    assert_int_equal(ct_gpt_generate(gpt, prompt, 3, -1, 1.0, 0, 1, out), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "max_new_tokens is -1");
    assert_int_equal(ct_gpt_generate(gpt, NULL, 3, 4, 1.0, 0, 1, out), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "prompt");
    ct_module *linear = ct_linear(2, 2, true);
    assert_int_equal(ct_gpt_generate(linear, prompt, 3, 4, 1.0, 0, 1, out), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "not a GPT");
    ct_module_release(linear);
    /* max_new_tokens 0 gives the prompt back */
    assert_int_equal(ct_gpt_generate(gpt, prompt, 3, 0, 1.0, 0, 1, out), CT_OK);
    assert_memory_equal(out, prompt, 3 * sizeof *out);
    ct_module_release(gpt);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cached_sampling_equals_full_recomputation_on_every_device),
        cmocka_unit_test(padded_ids_never_come_out),
        cmocka_unit_test(top_k_keeps_the_k_largest_logits_and_temperature_sharpens),
        cmocka_unit_test(bad_prompts_and_settings_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
