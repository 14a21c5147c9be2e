/* A GPT moves between llm.c's .bin, nanoGPT's and Hugging Face's safetensors and back unchanged
 * (llm.c -> safetensors -> llm.c gives the same bytes); the format is told from the contents; a
 * file or state dict that is not a GPT is refused naming the first bad tensor; a failed write
 * leaves the old file. */
#include "gpt_files_test.h"
#include "io/io_internal.h"

static int setup(void **state) { (void)state; gpt_test_setup(); return 0; }
static int teardown(void **state) { (void)state; gpt_test_cleanup(); return 0; }

static ct_state_dict *load(const char *path, ct_gpt_config *config)
{
    ct_state_dict *sd = ct_gpt_checkpoint_load(path, NULL, config);
    if (!sd) fail_msg("loading %s: %s", path, ct_last_error_message());
    return sd;
}

static void every_format_round_trips_and_llmc_keeps_its_bytes(void **state)
{
    (void)state;
    ct_gpt_config c = gpt_test_config(true);
    ct_state_dict *sd = gpt_test_state_dict(&c, 1);
    const char *bin = gpt_test_path("model.bin", 0), *nano = gpt_test_path("model.safetensors", 1);
    const char *hf = gpt_test_path("hf.safetensors", 2), *again = gpt_test_path("again.bin", 3);
    assert_int_equal(ct_gpt_checkpoint_save(sd, &c, bin, CT_GPT_FORMAT_LLMC), CT_OK);
    ct_gpt_config read;
    ct_state_dict *from_bin = load(bin, &read);
    gpt_test_assert_config(&read, &c);
    gpt_test_assert_same(from_bin, sd);
    /* the tied head is the one tensor under both names */
    ct_tensor *wte = ct_state_dict_get(from_bin, "transformer.wte.weight"), *head = ct_state_dict_get(from_bin, "lm_head.weight");
    assert_ptr_equal(wte, head);
    ct_release(wte);
    ct_release(head);

    assert_int_equal(ct_gpt_checkpoint_save(from_bin, &read, nano, CT_GPT_FORMAT_NANOGPT), CT_OK);
    ct_state_dict *from_nano = load(nano, &read);
    gpt_test_assert_config(&read, &c);
    gpt_test_assert_same(from_nano, sd);
    assert_string_equal(ct_state_dict_metadata(from_nano, "vocab_size"), "64"); /* nanoGPT's: wte's rows */
    assert_string_equal(ct_state_dict_metadata(from_nano, "unpadded_vocab_size"), "50");
    assert_string_equal(ct_state_dict_metadata(from_nano, "bias"), "True");

    /* metadata that does not fit the tensors is refused, naming both */
    assert_int_equal(ct_state_dict_set_metadata(from_nano, "n_layer", "3"), CT_OK);
    assert_int_equal(ct_save(from_nano, again), CT_OK);
    assert_null(ct_gpt_checkpoint_load(again, NULL, NULL));
    assert_error(CT_ERR_INVALID_ARGUMENT, "says n_layer 3 in its metadata but has the blocks transformer.h.0 .. 1");
    assert_int_equal(ct_state_dict_set_metadata(from_nano, "n_layer", "2"), CT_OK);
    assert_int_equal(ct_gpt_checkpoint_save(from_nano, &read, hf, CT_GPT_FORMAT_HF), CT_OK);
    ct_state_dict *from_hf = load(hf, &read);
    gpt_test_assert_config(&read, &c);
    gpt_test_assert_same(from_hf, sd);

    assert_int_equal(ct_gpt_checkpoint_save(from_hf, &read, again, CT_GPT_FORMAT_LLMC), CT_OK);
    gpt_test_assert_same_bytes(bin, again);

    ct_gpt_format format;
    assert_int_equal(ct_gpt_checkpoint_format(bin, &format), CT_OK);
    assert_int_equal(format, CT_GPT_FORMAT_LLMC);
    assert_int_equal(ct_gpt_checkpoint_format(nano, &format), CT_OK);
    assert_int_equal(format, CT_GPT_FORMAT_NANOGPT);
    assert_int_equal(ct_gpt_checkpoint_format(hf, &format), CT_OK);
    assert_int_equal(format, CT_GPT_FORMAT_HF);
    ct_state_dict_free(sd);
    ct_state_dict_free(from_bin);
    ct_state_dict_free(from_nano);
    ct_state_dict_free(from_hf);
}

/* Hugging Face's file: no prefix, no lm_head, Conv1D weights [in, out] (nanoGPT's transposed). */
static void hugging_face_names_and_conv1d_weights(void **state)
{
    (void)state;
    ct_gpt_config c = gpt_test_config(true);
    ct_state_dict *sd = gpt_test_state_dict(&c, 2);
    const char *hf = gpt_test_path("model.safetensors", 0);
    assert_int_equal(ct_gpt_checkpoint_save(sd, &c, hf, CT_GPT_FORMAT_HF), CT_OK);
    ct_state_dict *raw = ct_load(hf, NULL);
    assert_non_null(raw);
    assert_false(ct_state_dict_contains(raw, "lm_head.weight"));
    assert_false(ct_state_dict_contains(raw, "transformer.wte.weight"));
    ct_tensor *stored = ct_state_dict_get(raw, "h.1.mlp.c_fc.weight");
    ct_tensor *nano = ct_state_dict_get(sd, "transformer.h.1.mlp.c_fc.weight");
    assert_int_equal(ct_tensor_size(stored, 0), 8);
    assert_int_equal(ct_tensor_size(stored, 1), 32);
    ct_tensor *turned = ct_transpose(nano, 0, 1);
    gpt_test_assert_tensors_equal(stored, turned, "h.1.mlp.c_fc.weight");
    ct_release(turned);
    ct_release(stored);
    ct_release(nano);

    /* save_pretrained's names (with "transformer.") and a mask buffer load too; n_head from
     * config.json beside the file when the metadata does not say it */
    assert_int_equal(ct_state_dict_add_prefix(raw, "transformer."), CT_OK);
    int64_t mask_shape[4] = {1, 1, 16, 16};
    ct_tensor *mask = ct_ones(mask_shape, 4, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_add(raw, "transformer.h.0.attn.bias", mask), CT_OK);
    ct_release(mask);
    ct_state_dict *bare = ct_state_dict_create();
    for (int64_t i = 0; i < ct_state_dict_count(raw); i++) {
        ct_tensor *t = ct_state_dict_tensor_at(raw, i);
        assert_int_equal(ct_state_dict_add(bare, ct_state_dict_name_at(raw, i), t), CT_OK);
        ct_release(t);
    }
    const char *pretrained = gpt_test_path("pretrained.safetensors", 1);
    assert_int_equal(ct_save(bare, pretrained), CT_OK);
    ct_gpt_config read;
    assert_null(ct_gpt_checkpoint_load(pretrained, NULL, &read));
    assert_error(CT_ERR_INVALID_ARGUMENT, "does not say its number of heads");
    FILE *f = fopen(gpt_test_path("config.json", 2), "w");
    fputs("{\"model_type\": \"gpt2\", \"n_head\": 2, \"n_embd\": 8}", f);
    fclose(f);
    ct_state_dict *loaded = load(pretrained, &read);
    assert_int_equal(read.n_head, 2);
    assert_int_equal(read.vocab_size, 64); /* HF says no more than its rows */
    gpt_test_assert_same(loaded, sd);
    ct_gpt_load_options options = ct_gpt_load_options_default();
    options.n_head = 4;
    assert_null(ct_gpt_checkpoint_load(pretrained, &options, &read));
    assert_error(CT_ERR_INVALID_ARGUMENT, "says n_head 2; 4 was given");
    ct_state_dict_free(loaded);
    ct_state_dict_free(bare);
    ct_state_dict_free(raw);
    ct_state_dict_free(sd);
}

/* llm.c always has biases: a GPT without them is written with zeros, which read back as biases. */
static void a_gpt_without_biases_goes_to_llmc_with_zero_biases(void **state)
{
    (void)state;
    ct_gpt_config c = gpt_test_config(false);
    ct_state_dict *sd = gpt_test_state_dict(&c, 3);
    const char *nano = gpt_test_path("nobias.safetensors", 0), *bin = gpt_test_path("nobias.bin", 1);
    assert_int_equal(ct_gpt_checkpoint_save(sd, &c, nano, CT_GPT_FORMAT_NANOGPT), CT_OK);
    ct_gpt_config read;
    ct_state_dict *back = load(nano, &read);
    assert_false(read.bias);
    gpt_test_assert_same(back, sd);
    assert_int_equal(ct_gpt_checkpoint_save(back, &read, bin, CT_GPT_FORMAT_LLMC), CT_OK);
    ct_state_dict *with_bias = load(bin, &read);
    assert_true(read.bias);
    ct_tensor *b = ct_state_dict_get(with_bias, "transformer.h.1.mlp.c_fc.bias");
    float values[32];
    assert_int_equal(ct_tensor_to_array(b, values, sizeof values), CT_OK);
    for (int i = 0; i < 32; i++) assert_true(values[i] == 0.0f);
    ct_release(b);
    ct_state_dict_free(with_bias);
    ct_state_dict_free(back);
    ct_state_dict_free(sd);
}

static void state_dicts_that_are_not_a_gpt_name_the_first_bad_tensor(void **state)
{
    (void)state;
    ct_gpt_config c = gpt_test_config(true);
    ct_state_dict *sd = gpt_test_state_dict(&c, 4);
    assert_int_equal(ct_gpt_state_dict_check(sd, &c), CT_OK);
    const char *path = gpt_test_path("bad.bin", 0);
    /* a wrong shape */
    int64_t shape[2] = {8, 24};
    ct_tensor *wrong = ct_zeros(shape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *kept = ct_state_dict_get(sd, "transformer.h.1.attn.c_attn.weight");
    assert_int_equal(ct_state_dict_set(sd, "transformer.h.1.attn.c_attn.weight", wrong), CT_OK);
    assert_int_equal(ct_gpt_checkpoint_save(sd, &c, path, CT_GPT_FORMAT_LLMC), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "tensor 'transformer.h.1.attn.c_attn.weight' has shape [8, 24]; a GPT with n_layer 2, "
                               "n_embd 8, padded_vocab_size 64, block_size 16, bias true needs [24, 8]");
    assert_int_equal(access(path, F_OK), -1); /* nothing was written */
    assert_int_equal(ct_state_dict_set(sd, "transformer.h.1.attn.c_attn.weight", kept), CT_OK);
    ct_release(wrong);
    ct_release(kept);
    /* a missing one */
    ct_tensor *ln = ct_state_dict_get(sd, "transformer.h.0.ln_2.bias");
    assert_int_equal(ct_state_dict_remove(sd, "transformer.h.0.ln_2.bias"), CT_OK);
    assert_int_equal(ct_gpt_state_dict_check(sd, &c), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "has no tensor 'transformer.h.0.ln_2.bias' (shape [8])");
    /* one that is not a GPT's */
    assert_int_equal(ct_state_dict_add(sd, "transformer.h.0.ln_2.bias", ln), CT_OK);
    assert_int_equal(ct_state_dict_add(sd, "transformer.h.2.ln_1.weight", ln), CT_OK);
    assert_int_equal(ct_gpt_state_dict_check(sd, &c), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "tensor 'transformer.h.2.ln_1.weight' is not part of a GPT with n_layer 2");
    assert_int_equal(ct_state_dict_remove(sd, "transformer.h.2.ln_1.weight"), CT_OK);
    /* an untied head */
    int64_t head_shape[2] = {64, 8};
    ct_tensor *head = ct_zeros(head_shape, 2, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_set(sd, "lm_head.weight", head), CT_OK);
    assert_int_equal(ct_gpt_state_dict_check(sd, &c), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "'lm_head.weight' differs from 'transformer.wte.weight'");
    assert_int_equal(ct_state_dict_remove(sd, "lm_head.weight"), CT_OK); /* optional */
    assert_int_equal(ct_gpt_state_dict_check(sd, &c), CT_OK);
    ct_gpt_config odd = c;
    odd.n_head = 3;
    assert_int_equal(ct_gpt_state_dict_check(sd, &odd), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "n_head 3 does not divide n_embd 8");
    ct_release(head);
    ct_release(ln);
    ct_state_dict_free(sd);
}

static void put_i32(FILE *f, int32_t v) { fwrite(&v, 4, 1, f); }

static void bad_llmc_files_are_named_with_what_would_be_right(void **state)
{
    (void)state;
    ct_gpt_config c = gpt_test_config(true);
    ct_state_dict *sd = gpt_test_state_dict(&c, 5);
    const char *bin = gpt_test_path("model.bin", 0), *cut = gpt_test_path("cut.bin", 1);
    assert_int_equal(ct_gpt_checkpoint_save(sd, &c, bin, CT_GPT_FORMAT_LLMC), CT_OK);
    size_t size = 0;
    unsigned char *bytes = gpt_test_slurp(bin, &size);
    FILE *f = fopen(cut, "wb");
    fwrite(bytes, 1, size - 4, f);
    fclose(f);
    assert_null(ct_gpt_checkpoint_load(cut, NULL, NULL));
    assert_error(CT_ERR_IO, "llm.c checkpoint (version 3) of maxT 16, V 50, L 2, NH 2, C 8, Vp 64 is");
    f = fopen(cut, "wb");
    put_i32(f, 20240326);
    put_i32(f, 7);
    fwrite(bytes + 8, 1, size - 8, f);
    fclose(f);
    assert_null(ct_gpt_checkpoint_load(cut, NULL, NULL));
    assert_error(CT_ERR_IO, "version 7; ctorch reads versions 3 (float32");
    ct_gpt_load_options options = ct_gpt_load_options_default();
    options.format = CT_GPT_FORMAT_LLMC;
    f = fopen(cut, "wb");
    put_i32(f, 20240520);
    fwrite(bytes + 4, 1, size - 4, f);
    fclose(f);
    assert_null(ct_gpt_checkpoint_load(cut, &options, NULL));
    assert_error(CT_ERR_IO, "not llm.c's checkpoint magic 20240326");
    assert_null(ct_gpt_checkpoint_load(cut, NULL, NULL));
    assert_error(CT_ERR_IO, "neither an llm.c checkpoint");
    /* train_gpt2.cu's bfloat16 checkpoint (version 5): the same tensors, each value's upper 16 bits */
    f = fopen(cut, "wb");
    put_i32(f, 20240326);
    put_i32(f, 5);
    fwrite(bytes + 8, 1, 1024 - 8, f);
    for (size_t at = 1024; at < size; at += 4) fwrite(bytes + at + 2, 1, 2, f); /* little-endian: the high half */
    fclose(f);
    ct_gpt_config read;
    ct_state_dict *bf16 = ct_gpt_checkpoint_load(cut, NULL, &read), *full = ct_gpt_checkpoint_load(bin, NULL, NULL);
    assert_non_null(bf16);
    gpt_test_assert_config(&read, &c);
    for (int64_t i = 0; i < ct_state_dict_count(full); i++) {
        ct_tensor *x = ct_state_dict_tensor_at(full, i), *y = ct_state_dict_tensor_at(bf16, i);
        size_t n = (size_t)ct_numel(x);
        uint32_t *a = malloc(n * 4), *b = malloc(n * 4);
        assert_int_equal(ct_tensor_to_array(x, a, n * 4), CT_OK);
        assert_int_equal(ct_tensor_to_array(y, b, n * 4), CT_OK);
        for (size_t k = 0; k < n; k++) assert_int_equal(a[k] & 0xFFFF0000u, b[k]);
        free(a);
        free(b);
        ct_release(x);
        ct_release(y);
    }
    ct_state_dict_free(bf16);
    ct_state_dict_free(full);
    /* a truncated nanoGPT file */
    const char *nano = gpt_test_path("cut.safetensors", 2);
    assert_int_equal(ct_gpt_checkpoint_save(sd, &c, nano, CT_GPT_FORMAT_NANOGPT), CT_OK);
    assert_int_equal(truncate(nano, 3000), 0);
    assert_null(ct_gpt_checkpoint_load(nano, NULL, NULL));
    if (!strstr(ct_last_error_message(), nano)) fail_msg("'%s' lacks the path", ct_last_error_message());
    assert_int_equal(ct_last_error(), CT_ERR_IO);
    ct_clear_error();
    /* a failed write leaves the old file as it was */
    ct_io_fail_write_after_for_testing(2000);
    ct_gpt_config other = c;
    assert_int_equal(ct_gpt_checkpoint_save(sd, &other, bin, CT_GPT_FORMAT_LLMC), CT_ERR_IO);
    ct_io_fail_write_after_for_testing(SIZE_MAX);
    ct_clear_error();
    size_t after = 0;
    unsigned char *kept = gpt_test_slurp(bin, &after);
    assert_int_equal(after, size);
    assert_memory_equal(kept, bytes, size);
    free(kept);
    free(bytes);
    ct_state_dict_free(sd);
}

/* bench/llmc/make_llmc_reference.py's fixture: llm.c's losses for this model and these tokens.
 * Its files read here as train_gpt2.c read them (its config, 10 sequential batches of 4 x 64). */
static void the_llmc_reference_fixture_reads_as_llmc_read_it(void **state)
{
    (void)state;
    const char *dir = CTORCH_SOURCE_DIR "/tests/models/fixtures/llmc_tiny";
    ct_gpt_config c;
    ct_state_dict *sd = ct_gpt_checkpoint_load(CTORCH_SOURCE_DIR "/tests/models/fixtures/llmc_tiny/gpt2_tiny.bin", NULL, &c);
    assert_non_null(sd);
    ct_gpt_config expected = {.vocab_size = 256, .padded_vocab_size = 320, .block_size = 64, .n_layer = 2,
                              .n_head = 2, .n_embd = 32, .dropout = 0.0, .bias = true};
    gpt_test_assert_config(&c, &expected);
    /* llm.c's padded rows are zero */
    ct_tensor *wte = ct_state_dict_get(sd, "transformer.wte.weight");
    float rows[320 * 32];
    assert_int_equal(ct_tensor_to_array(wte, rows, sizeof rows), CT_OK);
    for (int i = 256 * 32; i < 320 * 32; i++) assert_true(rows[i] == 0.0f);
    ct_release(wte);
    ct_state_dict_free(sd);
    char path[400];
    snprintf(path, sizeof path, "%s/tiny_shakespeare_train.bin", dir);
    ct_token_data *train = ct_token_data_load(path, 256);
    assert_non_null(train);
    assert_int_equal(ct_token_data_size(train), 2561);
    ct_token_loader_options o = ct_token_loader_options_default();
    o.batch_size = 4;
    o.seq_len = 64;
    o.order = CT_TOKEN_ORDER_SEQUENTIAL;
    ct_token_loader *loader = ct_token_loader_create(train, &o);
    assert_int_equal(ct_token_loader_num_batches(loader), 10);
    ct_token_loader_free(loader);
    ct_token_data_free(train);
    snprintf(path, sizeof path, "%s/tiny_shakespeare_val.bin", dir);
    ct_token_data *val = ct_token_data_load(path, 256);
    assert_int_equal(ct_token_data_size(val), 1281);
    ct_token_data_free(val);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_format_round_trips_and_llmc_keeps_its_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(hugging_face_names_and_conv1d_weights, setup, teardown),
        cmocka_unit_test_setup_teardown(a_gpt_without_biases_goes_to_llmc_with_zero_biases, setup, teardown),
        cmocka_unit_test_setup_teardown(state_dicts_that_are_not_a_gpt_name_the_first_bad_tensor, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_llmc_files_are_named_with_what_would_be_right, setup, teardown),
        cmocka_unit_test(the_llmc_reference_fixture_reads_as_llmc_read_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
