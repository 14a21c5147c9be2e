/* The data of `ctorch train`: a CSV file (the shipped digits by default), split with a seed. */
#include "train.h"

ct_status ct_train_data_load(const char *path, uint64_t split_seed, ct_train_data *out)
{
    *out = (ct_train_data){0};
    if (!path) {
        path = ct_default_dataset_path();
        if (!path) return ct_train_fail_library("the digits data set");
    }
    ct_csv_options options = ct_csv_options_default();
    options.feature_scale = 1.0 / 16; /* digits' pixels are 0..16 */
    ct_dataset *all = ct_csv_dataset_load(path, &options);
    if (!all) return ct_train_fail_library("reading the data");
    int64_t classes = ct_dataset_num_classes(all);
    if (classes < 2) {
        ct_dataset_free(all);
        return ct_train_fail(CT_ERR_INVALID_ARGUMENT, "%s: the labels (the last column) hold %lld "
                             "class; training needs at least 2", path, (long long)classes);
    }
    ct_status status = ct_dataset_split(all, CT_TRAIN_TEST_FRACTION, split_seed, &out->train, &out->test);
    out->features = ct_dataset_num_features(all);
    out->classes = classes;
    ct_dataset_free(all);
    if (status != CT_OK) return ct_train_fail_library("splitting the data");
    return CT_OK;
}

void ct_train_data_free(ct_train_data *data)
{
    if (!data) return;
    ct_dataset_free(data->train);
    ct_dataset_free(data->test);
    *data = (ct_train_data){0};
}
