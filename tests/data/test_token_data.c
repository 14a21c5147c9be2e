/* Token data for language models: llm.c's token files read and written byte for byte, text read
 * as bytes, the last fraction kept for validation, errors that name the file, and the windows of
 * both orders (nanoGPT's random, llm.c's sequential), each DDP rank with its own. */
#include <stdio.h>

#include "data_test.h"

static int setup(void **state) { (void)state; data_test_setup(); return 0; }
static int teardown(void **state) { (void)state; data_test_cleanup(); return 0; }

static void put_i32(unsigned char *p, int32_t v)
{
    for (int b = 0; b < 4; b++) p[b] = (unsigned char)((uint32_t)v >> (8 * b));
}

/* An llm.c token file as dev/data/data_common.py's write_datafile makes it, with the header's
 * fields given (so that they can be wrong) and extra bytes at the end. */
static const char *write_token_file(const char *name, int32_t magic, int32_t version, int32_t count,
                                    const uint16_t *tokens, int64_t n, size_t extra)
{
    size_t size = 1024 + 2 * (size_t)n + extra;
    unsigned char *bytes = calloc(1, size);
    put_i32(bytes, magic);
    put_i32(bytes + 4, version);
    put_i32(bytes + 8, count);
    for (int64_t i = 0; i < n; i++) {
        bytes[1024 + 2 * i] = (unsigned char)(tokens[i] & 0xff);
        bytes[1024 + 2 * i + 1] = (unsigned char)(tokens[i] >> 8);
    }
    const char *path = data_test_write_bytes(name, (const char *)bytes, size);
    free(bytes);
    return path;
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc(*size + 1);
    assert_int_equal(fread(bytes, 1, *size, f), *size);
    fclose(f);
    return bytes;
}

static void llmc_token_files_read_and_write_the_same_bytes(void **state)
{
    (void)state;
    uint16_t tokens[5] = {50256, 15496, 11, 0, 65535};
    char path[600];
    snprintf(path, sizeof path, "%s", write_token_file("tokens.bin", 20240520, 1, 5, tokens, 5, 0));
    ct_token_data *data = ct_token_data_load_llmc(path, 0);
    assert_non_null(data);
    assert_int_equal(ct_token_data_size(data), 5);
    assert_int_equal(ct_token_data_vocab_size(data), 65536);
    int64_t read[5];
    assert_int_equal(ct_token_data_read(data, 0, 5, read), CT_OK);
    for (int i = 0; i < 5; i++) assert_int_equal(read[i], tokens[i]);
    assert_int_equal(ct_token_data_read(data, 3, 3, read), CT_ERR_INDEX);
    const char *copy = data_test_path("copy.bin");
    assert_int_equal(ct_token_data_save(data, copy), CT_OK);
    size_t a_size, b_size;
    unsigned char *a = slurp(path, &a_size), *b = slurp(copy, &b_size);
    assert_int_equal(a_size, b_size);
    assert_memory_equal(a, b, a_size);
    free(a);
    free(b);
    ct_token_data_free(data);
    /* ct_token_data_load knows it by its name and by its magic */
    data = ct_token_data_load(path, 0);
    assert_int_equal(ct_token_data_size(data), 5);
    ct_token_data_free(data);
    snprintf(path, sizeof path, "%s", write_token_file("tokens.dat", 20240520, 1, 5, tokens, 5, 0));
    data = ct_token_data_load(path, 0);
    assert_int_equal(ct_token_data_vocab_size(data), 65536);
    ct_token_data_free(data);
}

/* Each bad file fails with CT_ERR_IO (ids: CT_ERR_INVALID_ARGUMENT), naming the file. */
static void assert_token_file_fails(const char *path, int64_t vocab, ct_status status, const char *part)
{
    ct_clear_error();
    assert_null(ct_token_data_load_llmc(path, vocab));
    if (!strstr(ct_last_error_message(), path)) fail_msg("'%s' lacks the path %s", ct_last_error_message(), path);
    assert_error(status, part);
}

static void bad_token_files_are_named_with_what_would_be_right(void **state)
{
    (void)state;
    uint16_t tokens[4] = {1, 2, 300, 4};
    char path[600];
    snprintf(path, sizeof path, "%s", write_token_file("magic.bin", 20240326, 1, 4, tokens, 4, 0));
    assert_token_file_fails(path, 0, CT_ERR_IO, "not llm.c's token-file magic 20240520");
    snprintf(path, sizeof path, "%s", write_token_file("version.bin", 20240520, 7, 4, tokens, 4, 0));
    assert_token_file_fails(path, 0, CT_ERR_IO, "version 7; ctorch reads version 1");
    snprintf(path, sizeof path, "%s", write_token_file("short.bin", 20240520, 1, 5, tokens, 4, 0));
    assert_token_file_fails(path, 0, CT_ERR_IO, "the header says 5 tokens, which take 1034 bytes with the header; the file has 1032 bytes (truncated?)");
    snprintf(path, sizeof path, "%s", write_token_file("long.bin", 20240520, 1, 4, tokens, 4, 1));
    assert_token_file_fails(path, 0, CT_ERR_IO, "extra bytes");
    snprintf(path, sizeof path, "%s", write_token_file("empty.bin", 20240520, 1, 0, tokens, 0, 0));
    assert_token_file_fails(path, 0, CT_ERR_IO, "at least one token");
    snprintf(path, sizeof path, "%s", data_test_write_bytes("header.bin", "\x88\xd8\x34\x01\x01", 5));
    assert_token_file_fails(path, 0, CT_ERR_IO, "shorter than the 1024-byte header");
    snprintf(path, sizeof path, "%s", write_token_file("ids.bin", 20240520, 1, 4, tokens, 4, 0));
    assert_token_file_fails(path, 256, CT_ERR_INVALID_ARGUMENT, "token 2 is id 300, outside the vocabulary of 256");
    ct_token_data *data = ct_token_data_load_llmc(path, 301);
    assert_non_null(data);
    ct_token_data_free(data);
    assert_null(ct_token_data_load_llmc(path, 65537));
    assert_error(CT_ERR_INVALID_ARGUMENT, "vocab_size is 65537");
    assert_null(ct_token_data_load(data_test_path("missing.bin"), 0));
    assert_error(CT_ERR_IO, "No such file");
}

static void text_is_read_as_bytes_and_the_last_fraction_is_validation(void **state)
{
    (void)state;
    char text[100];
    for (int i = 0; i < 100; i++) text[i] = (char)(200 + i % 50);
    const char *path = data_test_write_bytes("text.txt", text, sizeof text);
    ct_token_data *data = ct_token_data_load(path, 0);
    assert_non_null(data);
    assert_int_equal(ct_token_data_vocab_size(data), 256);
    ct_token_data *train = NULL, *val = NULL;
    assert_int_equal(ct_token_data_split(data, 0.1, &train, &val), CT_OK);
    assert_int_equal(ct_token_data_size(train), 90);
    assert_int_equal(ct_token_data_size(val), 10);
    int64_t first, last;
    assert_int_equal(ct_token_data_read(val, 0, 1, &first), CT_OK);
    assert_int_equal(first, (unsigned char)text[90]);
    assert_int_equal(ct_token_data_read(train, 89, 1, &last), CT_OK);
    assert_int_equal(last, (unsigned char)text[89]);
    ct_token_data_free(train);
    ct_token_data_free(val);
    assert_int_equal(ct_token_data_split(data, 0.0, &train, &val), CT_OK);
    assert_int_equal(ct_token_data_size(train), 100);
    assert_null(val);
    ct_token_data_free(train);
    assert_int_equal(ct_token_data_split(data, 1.0, &train, &val), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_token_data_split(data, 0.999, &train, &val), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "training part would be empty");
    assert_int_equal(ct_token_data_split(data, 0.001, &train, &val), CT_OK); /* a token is a token */
    assert_int_equal(ct_token_data_size(val), 1);
    ct_token_data_free(train);
    ct_token_data_free(val);
    ct_token_data_free(data);
    assert_null(ct_token_data_load(path, 100));
    assert_error(CT_ERR_INVALID_ARGUMENT, "vocabulary of 256");
    assert_null(ct_token_data_load_text(data_test_write_bytes("empty.txt", "", 0)));
    assert_error(CT_ERR_IO, "is empty");
}

static void the_shipped_shakespeare_is_a_byte_corpus(void **state)
{
    (void)state;
    unsetenv("CTORCH_DATA");
    const char *found = ct_default_text_path();
    assert_non_null(found);
    assert_string_equal(found, CTORCH_SOURCE_DIR "/data/tinyshakespeare.txt");
    /* CTORCH_DATA: a folder holding it, or the digits file beside it */
    char mine[600], digits[600];
    snprintf(mine, sizeof mine, "%s", data_test_write("tinyshakespeare.txt", "To be"));
    snprintf(digits, sizeof digits, "%s", data_test_write("digits.csv.gz", "1,2\n"));
    setenv("CTORCH_DATA", data_test_folder, 1);
    assert_string_equal(ct_default_text_path(), mine);
    setenv("CTORCH_DATA", digits, 1);
    assert_string_equal(ct_default_text_path(), mine);
    assert_string_equal(ct_default_dataset_path(), digits);
    unlink(mine);
    assert_null(ct_default_text_path());
    assert_error(CT_ERR_IO, "neither a file beside it nor a folder holding tinyshakespeare.txt");
    unsetenv("CTORCH_DATA");
    ct_token_data *data = ct_token_data_load(CTORCH_SOURCE_DIR "/data/tinyshakespeare.txt", 0);
    assert_non_null(data);
    assert_int_equal(ct_token_data_size(data), 1115394);
    int64_t start[9];
    assert_int_equal(ct_token_data_read(data, 0, 9, start), CT_OK);
    for (int i = 0; i < 9; i++) assert_int_equal(start[i], (unsigned char)"First Cit"[i]);
    ct_token_data_free(data);
}

/* tokens 0, 1, 2, ...: a window's tokens say where it starts */
static ct_token_data *counting(int64_t n)
{
    int64_t *tokens = malloc((size_t)n * sizeof *tokens);
    for (int64_t i = 0; i < n; i++) tokens[i] = i;
    ct_token_data *data = ct_token_data_from_tokens(tokens, n, 65536);
    free(tokens);
    assert_non_null(data);
    return data;
}

/* The windows' starts of the loader's next batch; every row is T + 1 consecutive tokens. */
static void next_starts(ct_token_loader *loader, int64_t B, int64_t T, int64_t *starts)
{
    ct_scope_push();
    ct_tensor *x, *y;
    assert_int_equal(ct_token_loader_next(loader, &x, &y), CT_OK);
    assert_int_equal(ct_tensor_dtype(x), CT_I64);
    assert_int_equal(ct_tensor_size(x, 0), B);
    assert_int_equal(ct_tensor_size(y, 1), T);
    int64_t *xs = malloc((size_t)(B * T) * sizeof *xs), *ys = malloc((size_t)(B * T) * sizeof *ys);
    assert_int_equal(ct_tensor_to_array(x, xs, (size_t)(B * T) * sizeof *xs), CT_OK);
    assert_int_equal(ct_tensor_to_array(y, ys, (size_t)(B * T) * sizeof *ys), CT_OK);
    for (int64_t b = 0; b < B; b++) {
        starts[b] = xs[b * T];
        for (int64_t t = 0; t < T; t++) {
            assert_int_equal(xs[b * T + t], starts[b] + t);
            assert_int_equal(ys[b * T + t], starts[b] + t + 1);
        }
    }
    free(xs);
    free(ys);
    assert_int_equal(ct_scope_pop(), CT_OK);
}

static void the_sequential_order_is_llmc_s_and_wraps(void **state)
{
    (void)state;
    /* (N - 1) / (B * T) = 2 batches: [0, 25) and [24, 49), then from the start again */
    ct_token_data *data = counting(60);
    ct_token_loader_options o = ct_token_loader_options_default();
    o.batch_size = 2;
    o.seq_len = 12;
    o.order = CT_TOKEN_ORDER_SEQUENTIAL;
    ct_token_loader *loader = ct_token_loader_create(data, &o);
    assert_non_null(loader);
    assert_int_equal(ct_token_loader_num_batches(loader), 2);
    int64_t starts[2];
    int64_t expected[4][2] = {{0, 12}, {24, 36}, {0, 12}, {24, 36}};
    for (int k = 0; k < 4; k++) {
        next_starts(loader, 2, 12, starts);
        assert_int_equal(starts[0], expected[k][0]);
        assert_int_equal(starts[1], expected[k][1]);
    }
    assert_int_equal(ct_token_loader_position(loader), 4);
    assert_int_equal(ct_token_loader_set_position(loader, 1), CT_OK);
    next_starts(loader, 2, 12, starts);
    assert_int_equal(starts[0], 24);
    ct_token_loader_free(loader);
    /* too short for a batch of B * T + 1 tokens, or a window of T + 1 */
    o.batch_size = 5;
    assert_null(ct_token_loader_create(data, &o));
    assert_error(CT_ERR_INVALID_ARGUMENT, "needs 61");
    o.order = CT_TOKEN_ORDER_RANDOM;
    o.seq_len = 60;
    assert_null(ct_token_loader_create(data, &o));
    assert_error(CT_ERR_INVALID_ARGUMENT, "a window of seq_len 60 needs 61");
    ct_token_data_free(data);
}

/* Two ranks' batches of a step, one after the other, are the batch of one process with 2B. */
static void ranks_take_their_own_windows_in_both_orders(void **state)
{
    (void)state;
    ct_token_data *data = counting(500);
    for (int order = 0; order < 2; order++) {
        ct_token_loader_options o = ct_token_loader_options_default();
        o.order = (ct_token_order)order;
        o.seq_len = 8;
        o.seed = 1234;
        o.batch_size = 6;
        ct_token_loader *whole = ct_token_loader_create(data, &o);
        o.batch_size = 3;
        o.world_size = 2;
        ct_token_loader *rank[2];
        for (int r = 0; r < 2; r++) {
            o.rank = r;
            rank[r] = ct_token_loader_create(data, &o);
            assert_non_null(rank[r]);
        }
        for (int step = 0; step < 15; step++) { /* 15 > (500 - 1) / 48: the sequential order wraps */
            int64_t all[6], mine[2][3];
            next_starts(whole, 6, 8, all);
            next_starts(rank[0], 3, 8, mine[0]);
            next_starts(rank[1], 3, 8, mine[1]);
            for (int b = 0; b < 3; b++) {
                assert_int_equal(mine[0][b], all[b]);
                assert_int_equal(mine[1][b], all[3 + b]);
            }
        }
        ct_token_loader_free(whole);
        ct_token_loader_free(rank[0]);
        ct_token_loader_free(rank[1]);
    }
    ct_token_data_free(data);
}

static void random_windows_come_from_the_seed_and_reach_both_ends(void **state)
{
    (void)state;
    int64_t n = 40, T = 7;
    ct_token_data *data = counting(n);
    ct_token_loader_options o = ct_token_loader_options_default();
    o.batch_size = 16;
    o.seq_len = T;
    o.seed = 7;
    ct_token_loader *a = ct_token_loader_create(data, &o);
    ct_token_loader *b = ct_token_loader_create(data, &o);
    o.seed = 8;
    ct_token_loader *c = ct_token_loader_create(data, &o);
    int64_t seen[64] = {0};
    int differ = 0;
    for (int step = 0; step < 20; step++) {
        int64_t sa[16], sb[16], sc[16];
        next_starts(a, 16, T, sa);
        next_starts(b, 16, T, sb);
        next_starts(c, 16, T, sc);
        for (int k = 0; k < 16; k++) {
            assert_int_equal(sa[k], sb[k]);
            assert_true(sa[k] >= 0 && sa[k] <= n - T - 1);
            seen[sa[k]]++;
            differ += sa[k] != sc[k];
        }
    }
    for (int64_t s = 0; s <= n - T - 1; s++) /* 320 draws over 33 offsets: each is drawn */
        if (!seen[s]) fail_msg("offset %lld never drawn", (long long)s);
    assert_true(differ > 250);
    /* resuming at a batch gives what the run drew there */
    int64_t again[16], first[16];
    assert_int_equal(ct_token_loader_set_position(b, 3), CT_OK);
    next_starts(b, 16, T, again);
    assert_int_equal(ct_token_loader_set_position(a, 3), CT_OK);
    next_starts(a, 16, T, first);
    assert_memory_equal(again, first, sizeof first);
    ct_token_loader_free(a);
    ct_token_loader_free(b);
    ct_token_loader_free(c);
    ct_token_data_free(data);
}

/* Batches handed out on an accelerator hold what the CPU's hold. */
static void batches_go_to_the_loader_s_device(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 1) skip();
    ct_token_data *data = counting(300);
    ct_token_loader_options o = ct_token_loader_options_default();
    o.batch_size = 3;
    o.seq_len = 5;
    o.seed = 9;
    ct_token_loader *cpu = ct_token_loader_create(data, &o);
    o.device = (ct_device){CT_OPENCL, 0};
    ct_token_loader *device = ct_token_loader_create(data, &o);
    assert_non_null(device);
    ct_scope_push();
    ct_tensor *x, *y, *dx, *dy;
    assert_int_equal(ct_token_loader_next(cpu, &x, &y), CT_OK);
    assert_int_equal(ct_token_loader_next(device, &dx, &dy), CT_OK);
    assert_int_equal(ct_tensor_device(dx).type, CT_OPENCL);
    assert_int_equal(ct_tensor_device(dy).type, CT_OPENCL);
    int64_t a[15], b[15];
    assert_int_equal(ct_tensor_to_array(y, a, sizeof a), CT_OK);
    assert_int_equal(ct_tensor_to_array(dy, b, sizeof b), CT_OK);
    assert_memory_equal(a, b, sizeof a);
    assert_int_equal(ct_scope_pop(), CT_OK);
    ct_token_loader_free(cpu);
    ct_token_loader_free(device);
    ct_token_data_free(data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(llmc_token_files_read_and_write_the_same_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_token_files_are_named_with_what_would_be_right, setup, teardown),
        cmocka_unit_test_setup_teardown(text_is_read_as_bytes_and_the_last_fraction_is_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(the_shipped_shakespeare_is_a_byte_corpus, setup, teardown),
        cmocka_unit_test(the_sequential_order_is_llmc_s_and_wraps),
        cmocka_unit_test(ranks_take_their_own_windows_in_both_orders),
        cmocka_unit_test(random_windows_come_from_the_seed_and_reach_both_ends),
        cmocka_unit_test(batches_go_to_the_loader_s_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
