/* `ctorch train --scale`: what every feature is multiplied by is explicit. The shipped digits
 * default to 1/16 (pixels 0..16), any other CSV to 1 (read as it is, as a PyTorch DataLoader over
 * one's own tensors); the banner and --json say which. The checkpoint keeps it, so that eval tests
 * on inputs scaled as in training (the same accuracy), refuses another --scale, and reads a file
 * saved before the scale was kept as trained on features / 16, as every run was then; --resume
 * with another scale is refused. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "tool_test.h"
#include "train.h"

/* Runs the tool; fails the test unless it exits with status. Returns the output. */
static char *expect_status(const char *args, int status)
{
    int got;
    char *out = run_tool(args, &got);
    if (got != status) fail_msg("ctorch %s: status %d, want %d: %s", args, got, status, out);
    return out;
}

/* The "feature_scale" of the last JSON line of `ctorch args`, which must succeed; *accuracy (may
 * be NULL) its "test_accuracy". */
static double json_scale(const char *args, double *accuracy)
{
    char *out = expect_status(args, 0);
    cJSON *line = last_json_line(out);
    double scale = number(line, "feature_scale");
    if (accuracy) *accuracy = number(line, "test_accuracy");
    cJSON_Delete(line);
    free(out);
    return scale;
}

/* 200 rows of 4 features in [-1, 1], labelled by the sign of the first and second: what the issue's
 * user had, which /16 would have squeezed near 0. */
static void write_small_csv(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    uint64_t state = 12345;
    for (int row = 0; row < 200; row++) {
        double x[4];
        for (int k = 0; k < 4; k++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            x[k] = (double)(state >> 11) / 9007199254740992.0 * 2 - 1;
        }
        fprintf(f, "%.4f,%.4f,%.4f,%.4f,%d\n", x[0], x[1], x[2], x[3], (x[0] > 0) * 2 + (x[1] > 0));
    }
    fclose(f);
}

static void the_banner_and_json_say_the_scale(void **state)
{
    (void)state;
    char *out = expect_status("train --device cpu --epochs 1", 0);
    if (!strstr(out, "features x 0.0625 (--scale)")) fail_msg("the banner lacks the digits' scale: %s", out);
    free(out);
    out = expect_status("train --device cpu --epochs 1 --scale 1/255", 0);
    if (!strstr(out, "features x 0.00392157 (--scale)")) fail_msg("the banner lacks --scale 1/255: %s", out);
    free(out);
    assert_true(json_scale("train --device cpu --epochs 1 --json", NULL) == 1.0 / 16);
    assert_true(json_scale("train --device cpu --epochs 1 --json --data " CTORCH_DIGITS_PATH, NULL) == 1.0 / 16);
    assert_true(json_scale("train --device cpu --epochs 1 --json --scale=0.5", NULL) == 0.5);
    char csv[] = "/tmp/ctorch_scale_XXXXXX.csv";
    int fd = mkstemps(csv, 4);
    assert_true(fd >= 0);
    close(fd);
    write_small_csv(csv);
    char args[512];
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --json --data %s", csv);
    assert_true(json_scale(args, NULL) == 1.0); /* not the digits: no hidden scaling */
    free(expect_status("train --scale 0", 2));
    free(expect_status("train --scale 1/0", 2));
    free(expect_status("train --scale -2", 2));
    out = expect_status("eval --checkpoint x --scale nan", 2);
    if (!strstr(out, "--scale 'nan' is not a number above 0")) fail_msg("%s", out);
    free(out);
    unlink(csv);
}

static void eval_applies_the_training_scale(void **state)
{
    (void)state;
    char csv[] = "/tmp/ctorch_scale_XXXXXX.csv";
    int fd = mkstemps(csv, 4);
    assert_true(fd >= 0);
    close(fd);
    write_small_csv(csv);
    char path[256], args[1024];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_scale_test_");
    double trained, tested;
    snprintf(args, sizeof args, "train --device cpu --epochs 3 --json --data %s --scale 0.25 --save %s", csv, path);
    assert_true(json_scale(args, &trained) == 0.25);
    snprintf(args, sizeof args, "eval --device cpu --json --data %s --checkpoint %s", csv, path);
    assert_true(json_scale(args, &tested) == 0.25);
    assert_true(fabs(trained - tested) < 1e-12); /* the same test split, scaled the same */
    snprintf(args, sizeof args, "eval --device cpu --json --data %s --checkpoint %s --scale 1/4", csv, path);
    assert_true(json_scale(args, NULL) == 0.25);
    snprintf(args, sizeof args, "eval --device cpu --data %s --checkpoint %s --scale 1", csv, path);
    char *out = expect_status(args, 2);
    if (!strstr(out, "trained on features x 0.25") || !strstr(out, "not --scale 1"))
        fail_msg("eval --scale 1 of a file trained with 0.25: %s", out);
    free(out);

    /* --resume goes on with the scale it was saved with, or not at all */
    snprintf(args, sizeof args, "train --device cpu --epochs 4 --data %s --resume %s", csv, path);
    out = expect_status(args, 2);
    if (!strstr(out, "saved by a run with --scale 0.25, and this run has --scale 1"))
        fail_msg("a resume with another scale: %s", out);
    free(out);
    snprintf(args, sizeof args, "train --device cpu --epochs 4 --data %s --scale 0.25 --resume %s", csv, path);
    free(expect_status(args, 0));
    unlink(path);

    /* A file saved before the scale was kept (no "ctorch.train.feature_scale"): trained on / 16. */
    ct_train_data data;
    assert_int_equal(ct_train_data_load(csv, 0, &data), CT_OK);
    ct_module *model = ct_train_model_create(CT_TRAIN_MLP, data.features, data.classes);
    assert_non_null(model);
    assert_int_equal(ct_train_checkpoint_save(model, CT_TRAIN_MLP, data.features, data.classes, 0, path), CT_OK);
    snprintf(args, sizeof args, "eval --device cpu --json --data %s --checkpoint %s", csv, path);
    assert_true(json_scale(args, NULL) == 1.0 / 16);
    ct_module_release(model);
    ct_train_data_free(&data);
    unlink(path);
    unlink(csv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_banner_and_json_say_the_scale),
        cmocka_unit_test(eval_applies_the_training_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
