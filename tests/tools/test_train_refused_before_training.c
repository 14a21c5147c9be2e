/* `ctorch train` and `ctorch eval` refuse what cannot make a sound run before training, with status
 * 2 (the command line's error) or 1 (a bad file) and one line that names the options: options that
 * cannot go together (--graph with onecycle, --amp fp16 or --data-parallel; --amp with
 * --data-parallel), an epoch without a batch (--drop-last with a --batch-size above the training
 * set; onecycle then too), a --save path that is the --data file, a --lr-schedule field too long
 * to be a number, a label far above the rest (one class bound for train and eval, with the
 * distinct labels counted), a file without metadata whose tensors do not fit, and integer or bool
 * tensors where the model has float32 weights. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "tool_test.h"

/* The tool ends with status, one line that holds every one of parts (NULL-terminated), no epoch. */
static void assert_refused(const char *args, int status, const char *const *parts)
{
    int got;
    char *out = run_tool(args, &got);
    if (got != status) fail_msg("ctorch %s: status %d, want %d; output: %s", args, got, status, out);
    for (const char *const *part = parts; *part; part++)
        if (!strstr(out, *part)) fail_msg("ctorch %s: the output lacks '%s': %s", args, *part, out);
    if (strchr(out, '\n') != out + strlen(out) - 1) fail_msg("ctorch %s: not one line: %s", args, out);
    free(out);
}

#define REFUSED(args, status, ...) assert_refused(args, status, (const char *const[]){__VA_ARGS__, NULL})

typedef struct refusal {
    const char *args, *message;
} refusal;

static void conflicting_options_are_refused_while_parsing(void **state)
{
    (void)state;
    const refusal cases[] = {
        {"train --graph --lr-schedule onecycle", "--graph cannot go with --lr-schedule onecycle"},
        {"train --lr-schedule onecycle:0.01 --graph", "--graph cannot go with --lr-schedule onecycle"},
        {"train --graph --amp fp16", "--graph cannot go with --amp fp16"},
        {"train --graph --data-parallel cpu", "--graph cannot go with --data-parallel"},
        {"train --amp bf16 --data-parallel cpu", "--amp bf16 cannot go with --data-parallel"},
        {"train --data-parallel cpu --amp fp16", "--amp fp16 cannot go with --data-parallel"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        REFUSED(cases[i].args, 2, cases[i].message);
}

/* A CSV of rows lines "1,2,...,label" (4 features; label i % 2, or label for the first row). */
static void write_csv(char *path, int rows, long long first_label)
{
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < rows; i++)
        fprintf(f, "%d,%d,%d,%d,%lld\n", i, i + 1, i % 3, 16 - i % 16, i == 0 ? first_label : (long long)(i % 2));
    fclose(f);
}

static void an_epoch_without_a_batch_is_refused(void **state)
{
    (void)state;
    REFUSED("train --device cpu --batch-size 2000 --drop-last", 2, "an epoch would have no batch",
            "1437 samples", "--batch-size 2000 with --drop-last", "at most 1437", "leave out --drop-last");
    REFUSED("train --device cpu --batch-size 2000 --drop-last --lr-schedule onecycle", 2,
            "an epoch would have no batch");
    /* 5 rows: 4 train, in no batch of 32 with --drop-last (without it, one batch of 4). */
    char path[] = "/tmp/ctorch_no_batch_XXXXXX.csv", args[256];
    write_csv(path, 5, 1);
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --drop-last --data %s", path);
    REFUSED(args, 2, "an epoch would have no batch", "4 samples");
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --data %s --json", path);
    int status;
    free(run_tool(args, &status));
    assert_int_equal(status, 0);
    unlink(path);
}

static void a_save_path_that_is_the_data_is_refused(void **state)
{
    (void)state;
    char path[] = "/tmp/ctorch_save_data_XXXXXX.csv", args[512], link[64];
    write_csv(path, 20, 1);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --data %s --save %s", path, path);
    REFUSED(args, 2, "--save", "is the --data file");
    /* another name of the same file */
    snprintf(link, sizeof link, "%s.link", path);
    assert_int_equal(symlink(path, link), 0);
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --data %s --save %s", path, link);
    REFUSED(args, 2, "is the --data file");
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    unlink(link);
    unlink(path);
}

static void a_schedule_field_too_long_is_named(void **state)
{
    (void)state;
    char args[256] = "train --lr-schedule step:";
    size_t used = strlen(args);
    memset(args + used, '1', 70);
    args[used + 70] = '\0';
    REFUSED(args, 2, "has a field of 64 characters or more");
    REFUSED("train --lr-schedule step:1:2:3", 2, "has too many fields");
}

static void a_label_far_above_the_rest_is_refused_when_read(void **state)
{
    (void)state;
    char path[] = "/tmp/ctorch_big_label_XXXXXX.csv", args[256];
    write_csv(path, 5, 1100000);
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --data %s", path);
    REFUSED(args, 2, "the largest label (the last column) is 1100000", "more than the 1048576",
            "3 distinct labels were seen");
    unlink(path);
}

static void save(ct_state_dict *sd, const char *name, ct_dtype dtype, const int64_t *shape, int ndim)
{
    ct_tensor *t = ct_zeros(shape, ndim, dtype, CT_DEVICE_CPU);
    assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
    ct_release(t);
}

/* The mlp's tensors as PyTorch names them, 0.weight in dtype, 2.weight with classes rows. */
static void write_mlp(const char *path, ct_dtype dtype, int64_t classes)
{
    ct_state_dict *sd = ct_state_dict_create();
    save(sd, "0.weight", dtype, (int64_t[]){256, 64}, 2);
    save(sd, "0.bias", CT_F32, (int64_t[]){256}, 1);
    save(sd, "2.weight", CT_F32, (int64_t[]){classes, 256}, 2);
    save(sd, "2.bias", CT_F32, (int64_t[]){10}, 1);
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict_free(sd);
}

static void checkpoints_that_do_not_fit_say_why(void **state)
{
    (void)state;
    char path[256], args[512];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_refused_");
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s", path);
    /* without metadata: the model its tensors describe, not "of its __metadata__" */
    write_mlp(path, CT_F32, 7);
    REFUSED(args, 1, "does not fit the mlp model its tensors describe (it has no ctorch __metadata__)");
    const ct_dtype refused[] = {CT_I64, CT_I32, CT_BOOL};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        write_mlp(path, refused[i], 10);
        REFUSED(args, 1, "'0.weight' holds", ct_dtype_name(refused[i]), "an integer or bool one is refused");
    }
    /* float64 is converted, as load_state_dict copies it */
    write_mlp(path, CT_F64, 10);
    int status;
    free(run_tool(args, &status));
    assert_int_equal(status, 0);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conflicting_options_are_refused_while_parsing),
        cmocka_unit_test(an_epoch_without_a_batch_is_refused),
        cmocka_unit_test(a_save_path_that_is_the_data_is_refused),
        cmocka_unit_test(a_schedule_field_too_long_is_named),
        cmocka_unit_test(a_label_far_above_the_rest_is_refused_when_read),
        cmocka_unit_test(checkpoints_that_do_not_fit_say_why),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
