/* `ctorch train --resume` refuses, before training, a file that is not the run it continues: another
 * --drop-last, other data with the same number of rows (the training split's checksum), a file
 * without the data's count or checksum (not "trained on -1 samples"), and a schedule count that
 * contradicts the epochs done (found before an epoch trains, not after). Each with its status (2:
 * the command line's; 1: the file's) and a message naming what differs. And a checkpoint of 40,000
 * optimizer entries evaluates in a second, not in half a minute (they are dropped in one pass). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "tool_test.h"

static char *runs(const char *args, int want)
{
    int status;
    char *out = run_tool(args, &status);
    if (status != want) fail_msg("ctorch %s: status %d, want %d: %s", args, status, want, out);
    return out;
}

/* Refused with status before any epoch, the output naming part. */
static void refused(const char *args, int status, const char *part)
{
    char *out = runs(args, status);
    if (!strstr(out, part)) fail_msg("ctorch %s: the output lacks '%s': %s", args, part, out);
    if (strstr(out, "epoch 2/")) fail_msg("ctorch %s: trained before refusing: %s", args, out);
    free(out);
}

/* A CSV of 60 rows of 4 features, labels 0..2; shift changes every value but the labels. */
static void write_csv(char *path, int shift)
{
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 60; i++)
        fprintf(f, "%d,%d,%d,%d,%d\n", (i + shift) % 16, (3 * i) % 16, (i * i + shift) % 16, 16 - i % 16, i % 3);
    fclose(f);
}

/* The file at path saved again with the metadata key set to value. */
static void rewrite_metadata(const char *path, const char *key, const char *value)
{
    ct_state_dict *sd = ct_load(path, "cpu");
    assert_non_null(sd);
    assert_int_equal(ct_state_dict_set_metadata(sd, key, value), CT_OK);
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict_free(sd);
}

static void a_file_of_another_run_is_refused_before_training(void **state)
{
    (void)state;
    char data[] = "/tmp/ctorch_resume_a_XXXXXX.csv", other[] = "/tmp/ctorch_resume_b_XXXXXX.csv";
    write_csv(data, 0);
    write_csv(other, 5);
    char saved[256], args[1024];
    ct_test_fresh_checkpoint_path(saved, sizeof saved, "ctorch_resume_refused_");
    const char *options = "--device cpu --batch-size 8 --lr-schedule step:1:0.5";
    snprintf(args, sizeof args, "train %s --epochs 1 --drop-last --data %s --save %s", options, data, saved);
    free(runs(args, 0));

    snprintf(args, sizeof args, "train %s --epochs 2 --data %s --resume %s", options, data, saved);
    refused(args, 2, "was saved by a run with --drop-last yes, and this run has --drop-last no");
    snprintf(args, sizeof args, "train %s --epochs 2 --drop-last --data %s --resume %s", options, other, saved);
    refused(args, 2, "was saved by a run that trained on other data (checksum");
    snprintf(args, sizeof args, "train %s --epochs 2 --drop-last --data %s --resume %s", options, data, saved);
    free(runs(args, 0)); /* the same run resumes */

    /* tampered or older files: what is missing or contradicts is named */
    const struct {
        const char *key, *value, *message;
    } tampered[] = {
        {"ctorch.train.train_samples", "", "holds no 'ctorch.train.train_samples' (a count) or "
                                           "'ctorch.train.data_checksum'"},
        {"ctorch.train.data_checksum", "0123456789abcdef", "trained on other data (checksum 0123456789abcdef"},
        {"ctorch.train.schedule_steps", "7", "its 'ctorch.train.schedule_steps' is 7, but after 1 epoch of its "
                                             "--lr-schedule it is 1"},
    };
    char copy[256];
    ct_test_fresh_checkpoint_path(copy, sizeof copy, "ctorch_resume_tampered_");
    for (size_t i = 0; i < sizeof tampered / sizeof *tampered; i++) {
        ct_state_dict *sd = ct_load(saved, "cpu");
        assert_int_equal(ct_save(sd, copy), CT_OK);
        ct_state_dict_free(sd);
        rewrite_metadata(copy, tampered[i].key, tampered[i].value);
        snprintf(args, sizeof args, "train %s --epochs 2 --drop-last --data %s --resume %s", options, data, copy);
        refused(args, i == 1 ? 2 : 1, tampered[i].message);
    }
    unlink(copy);
    unlink(saved);
    unlink(data);
    unlink(other);
}

static void a_checkpoint_of_many_optimizer_entries_evaluates_fast(void **state)
{
    (void)state;
    char saved[256], args[512];
    ct_test_fresh_checkpoint_path(saved, sizeof saved, "ctorch_many_entries_");
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --save %s", saved);
    free(runs(args, 0));
    ct_state_dict *sd = ct_load(saved, "cpu");
    assert_non_null(sd);
    ct_tensor *t = ct_zeros((int64_t[]){1}, 1, CT_F32, CT_DEVICE_CPU);
    char name[64];
    for (int i = 0; i < 40000; i++) {
        snprintf(name, sizeof name, "optimizer.state.%d.extra", 1000 + i);
        assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
    }
    ct_release(t);
    assert_int_equal(ct_save(sd, saved), CT_OK);
    ct_state_dict_free(sd);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s", saved);
    free(runs(args, 0));
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
    if (seconds > 5) fail_msg("eval of a checkpoint with 40,000 optimizer entries took %.1f s", seconds);
    unlink(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_file_of_another_run_is_refused_before_training),
        cmocka_unit_test(a_checkpoint_of_many_optimizer_entries_evaluates_fast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
