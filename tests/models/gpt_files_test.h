/* What the GPT file tests share: a temporary folder, a GPT state dict of random values made from
 * nanoGPT's names (no model needed), and comparing state dicts and files. */
#ifndef CT_TEST_GPT_FILES_TEST_H
#define CT_TEST_GPT_FILES_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_common.h"

static char gpt_test_folder[256];

static inline void gpt_test_setup(void)
{
    strcpy(gpt_test_folder, "/tmp/ctorch-gpt-files-XXXXXX");
    if (!mkdtemp(gpt_test_folder)) fail_msg("mkdtemp failed");
}

static inline void gpt_test_cleanup(void)
{
    char command[300];
    snprintf(command, sizeof command, "rm -rf '%s'", gpt_test_folder);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", gpt_test_folder);
}

/* The path of name in the folder; slot 0..3 keeps up to four at a time. */
static inline const char *gpt_test_path(const char *name, int slot)
{
    static char paths[4][300];
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", gpt_test_folder, name);
    return paths[slot];
}

/* vocab 50 padded to 64, block 16, 2 layers, 2 heads, 8 channels */
static inline ct_gpt_config gpt_test_config(bool bias)
{
    return (ct_gpt_config){.vocab_size = 50, .padded_vocab_size = 64, .block_size = 16, .n_layer = 2,
                           .n_head = 2, .n_embd = 8, .dropout = 0.0, .bias = bias};
}

static inline void gpt_test_add(ct_state_dict *sd, const char *name, int64_t rows, int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    ct_tensor *t = ct_randn(shape, cols ? 2 : 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
    ct_release(t);
}

/* A GPT's tensors with nanoGPT's names and random values, lm_head.weight tied to wte. */
static inline ct_state_dict *gpt_test_state_dict(const ct_gpt_config *c, uint64_t seed)
{
    ct_manual_seed(seed);
    int64_t C = c->n_embd;
    ct_state_dict *sd = ct_state_dict_create();
    gpt_test_add(sd, "transformer.wte.weight", c->padded_vocab_size, C);
    gpt_test_add(sd, "transformer.wpe.weight", c->block_size, C);
    char name[96];
    struct { const char *leaf; int64_t rows, cols; bool is_bias; } block[] = {
        {"ln_1.weight", C, 0, false}, {"ln_1.bias", C, 0, true}, {"attn.c_attn.weight", 3 * C, C, false},
        {"attn.c_attn.bias", 3 * C, 0, true}, {"attn.c_proj.weight", C, C, false}, {"attn.c_proj.bias", C, 0, true},
        {"ln_2.weight", C, 0, false}, {"ln_2.bias", C, 0, true}, {"mlp.c_fc.weight", 4 * C, C, false},
        {"mlp.c_fc.bias", 4 * C, 0, true}, {"mlp.c_proj.weight", C, 4 * C, false}, {"mlp.c_proj.bias", C, 0, true}};
    for (int64_t l = 0; l < c->n_layer; l++)
        for (size_t k = 0; k < sizeof block / sizeof block[0]; k++) {
            if (block[k].is_bias && !c->bias) continue;
            snprintf(name, sizeof name, "transformer.h.%lld.%s", (long long)l, block[k].leaf);
            gpt_test_add(sd, name, block[k].rows, block[k].cols);
        }
    gpt_test_add(sd, "transformer.ln_f.weight", C, 0);
    if (c->bias) gpt_test_add(sd, "transformer.ln_f.bias", C, 0);
    ct_tensor *wte = ct_state_dict_get(sd, "transformer.wte.weight");
    assert_int_equal(ct_state_dict_add(sd, "lm_head.weight", wte), CT_OK);
    ct_release(wte);
    return sd;
}

static inline void gpt_test_assert_tensors_equal(const ct_tensor *a, const ct_tensor *b, const char *name)
{
    assert_int_equal(ct_numel(a), ct_numel(b));
    size_t n = (size_t)ct_numel(a);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    ct_tensor *fa = ct_to_dtype(a, CT_F32), *fb = ct_to_dtype(b, CT_F32);
    assert_int_equal(ct_tensor_to_array(fa, x, n * sizeof *x), CT_OK);
    assert_int_equal(ct_tensor_to_array(fb, y, n * sizeof *y), CT_OK);
    if (memcmp(x, y, n * sizeof *x) != 0) fail_msg("tensor '%s' differs", name);
    ct_release(fa);
    ct_release(fb);
    free(x);
    free(y);
}

/* The same names in the same order, the same shapes and values. */
static inline void gpt_test_assert_same(const ct_state_dict *a, const ct_state_dict *b)
{
    assert_int_equal(ct_state_dict_count(a), ct_state_dict_count(b));
    for (int64_t i = 0; i < ct_state_dict_count(a); i++) {
        assert_string_equal(ct_state_dict_name_at(a, i), ct_state_dict_name_at(b, i));
        ct_tensor *x = ct_state_dict_tensor_at(a, i), *y = ct_state_dict_tensor_at(b, i);
        assert_int_equal(ct_tensor_ndim(x), ct_tensor_ndim(y));
        for (int d = 0; d < ct_tensor_ndim(x); d++) assert_int_equal(ct_tensor_size(x, d), ct_tensor_size(y, d));
        gpt_test_assert_tensors_equal(x, y, ct_state_dict_name_at(a, i));
        ct_release(x);
        ct_release(y);
    }
}

static inline void gpt_test_assert_config(const ct_gpt_config *a, const ct_gpt_config *b)
{
    assert_int_equal(a->vocab_size, b->vocab_size);
    assert_int_equal(a->padded_vocab_size, b->padded_vocab_size);
    assert_int_equal(a->block_size, b->block_size);
    assert_int_equal(a->n_layer, b->n_layer);
    assert_int_equal(a->n_head, b->n_head);
    assert_int_equal(a->n_embd, b->n_embd);
    assert_int_equal(a->bias, b->bias);
}

static inline unsigned char *gpt_test_slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc(*size + 1);
    assert_int_equal(fread(bytes, 1, *size, f), *size);
    fclose(f);
    return bytes;
}

static inline void gpt_test_assert_same_bytes(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *x = gpt_test_slurp(a, &na), *y = gpt_test_slurp(b, &nb);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(na, nb);
    if (memcmp(x, y, na) != 0) fail_msg("'%s' and '%s' differ", a, b);
    free(x);
    free(y);
}

#endif
