/* `ctorch eval` rebuilds the model a checkpoint's __metadata__ describes, so a small file claiming a
 * huge model could make it allocate gigabytes: the file's tensor shapes are compared with those of
 * the described model (ct_train_model_shapes, checked here against the models ct_train_model_create
 * builds) before anything is built. */
#include <stdio.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "test_common.h"
#include "train.h"

static void the_shapes_are_those_of_the_built_models(void **state)
{
    (void)state;
    const struct {
        ct_train_model kind;
        int64_t features, classes;
    } cases[] = {{CT_TRAIN_MLP, 64, 10}, {CT_TRAIN_MLP, 3, 2}, {CT_TRAIN_CNN, 64, 10},
                 {CT_TRAIN_CNN, 16, 2},  {CT_TRAIN_CNN, 100, 7}, {CT_TRAIN_CNN, 784, 10}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ct_train_tensor_shape shapes[CT_TRAIN_MODEL_TENSORS_MAX];
        int count = ct_train_model_shapes(cases[c].kind, cases[c].features, cases[c].classes, shapes);
        ct_module *model = ct_train_model_create(cases[c].kind, cases[c].features, cases[c].classes);
        assert_non_null(model);
        ct_state_dict *sd = ct_module_state_dict(model, NULL);
        assert_int_equal(count, ct_state_dict_count(sd));
        for (int k = 0; k < count; k++) {
            ct_tensor *t = ct_state_dict_get(sd, shapes[k].name);
            if (!t) fail_msg("case %zu: the model has no '%s'", c, shapes[k].name);
            assert_int_equal(ct_tensor_ndim(t), shapes[k].ndim);
            assert_memory_equal(ct_tensor_shape(t), shapes[k].shape, (size_t)shapes[k].ndim * sizeof(int64_t));
            ct_release(t);
        }
        ct_state_dict_free(sd);
        ct_module_release(model);
    }
    ct_train_tensor_shape shapes[CT_TRAIN_MODEL_TENSORS_MAX];
    assert_int_equal(ct_train_model_shapes(CT_TRAIN_CNN, 63, 10, shapes), -1);
    if (!strstr(ct_train_error_message(), "63 features are not one"))
        fail_msg("unexpected message: %s", ct_train_error_message());
}

/* A real mlp checkpoint (64 features, 10 classes) whose metadata then says other sizes. */
static void write_checkpoint(const char *path, const char *model, const char *features, const char *classes)
{
    ct_manual_seed(1);
    ct_module *mlp = ct_train_model_create(CT_TRAIN_MLP, 64, 10);
    ct_state_dict *sd = ct_module_state_dict(mlp, NULL);
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.model", model), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.features", features), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.classes", classes), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.train.split_seed", "0"), CT_OK);
    assert_int_equal(ct_save(sd, path), CT_OK);
    ct_state_dict_free(sd);
    ct_module_release(mlp);
}

/* Loading fails with CT_ERR_IO and part, and allocates no more than the file's tensors (150 KiB)
 * on the way: the model the metadata claims (65536 features: 64 MiB) is never built. */
static void refused_before_building(const char *path, const char *part)
{
    ct_train_checkpoint checkpoint;
    ct_reset_peak_memory_stats(CT_DEVICE_CPU);
    size_t before = ct_memory_allocated(CT_DEVICE_CPU);
    assert_int_equal(ct_train_checkpoint_load(path, "cpu", &checkpoint), CT_ERR_IO);
    size_t peak = ct_max_memory_allocated(CT_DEVICE_CPU) - before;
    if (peak > ((size_t)1 << 20)) fail_msg("%zu bytes were allocated to refuse the file", peak);
    if (!strstr(ct_train_error_message(), part)) fail_msg("'%s' lacks '%s'", ct_train_error_message(), part);
    if (!strstr(ct_train_error_message(), path)) fail_msg("'%s' lacks the path", ct_train_error_message());
    assert_null(checkpoint.model);
}

static void metadata_that_does_not_fit_the_tensors_is_refused_before_building(void **state)
{
    (void)state;
    char path[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_crafted_");
    write_checkpoint(path, "mlp", "65536", "10");
    refused_before_building(path, "does not fit the mlp model of its __metadata__ (65536 features, 10 classes): "
                                  "its '0.weight' is [256, 65536], but the file's is [256, 64]");
    write_checkpoint(path, "mlp", "64", "1048576");
    refused_before_building(path, "(64 features, 1048576 classes): its '2.weight' is [1048576, 256], but the "
                                  "file's is [10, 256]");
    write_checkpoint(path, "cnn", "65536", "10");
    refused_before_building(path, "does not fit the cnn model of its __metadata__ (65536 features, 10 classes): "
                                  "Missing key(s): \"1.weight\", \"1.bias\", \"4.weight\", \"4.bias\", "
                                  "\"8.weight\", \"8.bias\"; Unexpected key(s): \"0.weight\", \"0.bias\", "
                                  "\"2.weight\", \"2.bias\"");
    /* the true sizes load */
    write_checkpoint(path, "mlp", "64", "10");
    ct_train_checkpoint checkpoint;
    assert_int_equal(ct_train_checkpoint_load(path, "cpu", &checkpoint), CT_OK);
    assert_non_null(checkpoint.model);
    ct_train_checkpoint_free(&checkpoint);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_shapes_are_those_of_the_built_models),
        cmocka_unit_test(metadata_that_does_not_fit_the_tensors_is_refused_before_building),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
