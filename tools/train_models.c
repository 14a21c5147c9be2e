/* The models of `ctorch train`, built from ctorch's nn modules:
 *   mlp: Linear(F, 256) ReLU Linear(256, C)
 *   cnn: the sample as a 1 x S x S image (S = sqrt F), Conv2d(1, 16, 3, padding 1) ReLU
 *        MaxPool2d(2) Conv2d(16, 32, 3, padding 1) ReLU MaxPool2d(2) Flatten Linear(32 S/4 S/4, C)
 * Small on purpose: digits has 1797 8 x 8 images, and the default run must take seconds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

enum { MLP_HIDDEN = 256, CNN_CHANNELS1 = 16, CNN_CHANNELS2 = 32 };

static const char *const model_names[CT_TRAIN_MODEL_COUNT] = {"mlp", "cnn"};
static const char *const optimizer_names[CT_TRAIN_OPTIMIZER_COUNT] = {"sgd", "adam", "adamw"};

const char *ct_train_model_name(ct_train_model model)
{
    return model >= 0 && model < CT_TRAIN_MODEL_COUNT ? model_names[model] : "invalid";
}

const char *ct_train_optimizer_name(ct_train_optimizer optimizer)
{
    return optimizer >= 0 && optimizer < CT_TRAIN_OPTIMIZER_COUNT ? optimizer_names[optimizer] : "invalid";
}

bool ct_train_model_parse(const char *text, ct_train_model *out)
{
    for (int i = 0; text && i < CT_TRAIN_MODEL_COUNT; i++)
        if (strcmp(text, model_names[i]) == 0) {
            *out = (ct_train_model)i;
            return true;
        }
    return false;
}

const char *ct_train_amp_name(ct_dtype amp)
{
    return amp == CT_BF16 ? "bf16" : amp == CT_F16 ? "fp16" : amp == CT_F32 ? "none" : "invalid";
}

bool ct_train_amp_parse(const char *text, ct_dtype *out)
{
    static const ct_dtype choices[3] = {CT_F32, CT_BF16, CT_F16};
    for (int i = 0; text && i < 3; i++)
        if (strcmp(text, ct_train_amp_name(choices[i])) == 0) {
            *out = choices[i];
            return true;
        }
    return false;
}

bool ct_train_optimizer_parse(const char *text, ct_train_optimizer *out)
{
    for (int i = 0; text && i < CT_TRAIN_OPTIMIZER_COUNT; i++)
        if (strcmp(text, optimizer_names[i]) == 0) {
            *out = (ct_train_optimizer)i;
            return true;
        }
    return false;
}

/* nn.Unflatten(1, (1, S, S)): [N, S*S] -> [N, 1, S, S], a view. */
typedef struct unflatten {
    int64_t side;
} unflatten;

static ct_tensor *unflatten_forward(ct_module *self, const ct_tensor *x)
{
    const unflatten *config = ct_module_data(self);
    return ct_reshape(x, (int64_t[]){-1, 1, config->side, config->side}, 4);
}

static ct_module *unflatten_module(int64_t side)
{
    unflatten *config = malloc(sizeof *config);
    if (!config) return NULL;
    config->side = side;
    ct_module *m = ct_module_create("Unflatten", unflatten_forward, config, free);
    if (!m) free(config);
    return m;
}

static ct_module *mlp(int64_t features, int64_t classes)
{
    return ct_sequential((ct_module *[]){ct_linear(features, MLP_HIDDEN, true), ct_relu_module(),
                                         ct_linear(MLP_HIDDEN, classes, true)}, 3);
}

static ct_module *cnn(int64_t side, int64_t classes)
{
    const int64_t kernel[2] = {3, 3}, pool[2] = {2, 2};
    ct_conv2d_options same = ct_conv2d_options_default();
    same.padding[0] = same.padding[1] = 1;
    int64_t pooled = side / 2 / 2;
    return ct_sequential((ct_module *[]){unflatten_module(side),
                                         ct_conv2d_module(1, CNN_CHANNELS1, kernel, &same), ct_relu_module(),
                                         ct_max_pool2d_module(pool, NULL, NULL),
                                         ct_conv2d_module(CNN_CHANNELS1, CNN_CHANNELS2, kernel, &same),
                                         ct_relu_module(), ct_max_pool2d_module(pool, NULL, NULL),
                                         ct_flatten_module(1, -1),
                                         ct_linear(CNN_CHANNELS2 * pooled * pooled, classes, true)}, 9);
}

/* Sizes a model can have; the cnn's side (sqrt features) into *side. */
static bool check_sizes(ct_train_model model, int64_t features, int64_t classes, int64_t *side)
{
    if (features < 1 || classes < 2) {
        ct_train_fail(CT_ERR_INVALID_ARGUMENT, "a model needs at least 1 feature and 2 classes, not "
                      "%lld and %lld", (long long)features, (long long)classes);
        return false;
    }
    if (model == CT_TRAIN_MLP) return true;
    if (model == CT_TRAIN_CNN) {
        *side = (int64_t)llround(sqrt((double)features));
        if (*side * *side == features && *side >= 4) return true;
        ct_train_fail(CT_ERR_INVALID_ARGUMENT, "the cnn reads each sample as a square image of at "
                      "least 4 x 4; %lld features are not one (digits has 64: 8 x 8)", (long long)features);
        return false;
    }
    ct_train_fail(CT_ERR_INVALID_ARGUMENT, "unknown model %d; models are mlp and cnn", (int)model);
    return false;
}

ct_module *ct_train_model_create(ct_train_model model, int64_t features, int64_t classes)
{
    int64_t side = 0;
    if (!check_sizes(model, features, classes, &side)) return NULL;
    ct_module *m = model == CT_TRAIN_MLP ? mlp(features, classes) : cnn(side, classes);
    if (!m) ct_train_fail_library("building the model");
    return m;
}

int ct_train_model_shapes(ct_train_model model, int64_t features, int64_t classes, ct_train_tensor_shape *out)
{
    int64_t side = 0;
    if (!check_sizes(model, features, classes, &side)) return -1;
    if (model == CT_TRAIN_MLP) {
        out[0] = (ct_train_tensor_shape){"0.weight", 2, {MLP_HIDDEN, features}};
        out[1] = (ct_train_tensor_shape){"0.bias", 1, {MLP_HIDDEN}};
        out[2] = (ct_train_tensor_shape){"2.weight", 2, {classes, MLP_HIDDEN}};
        out[3] = (ct_train_tensor_shape){"2.bias", 1, {classes}};
        return 4;
    }
    int64_t pooled = side / 2 / 2;
    out[0] = (ct_train_tensor_shape){"1.weight", 4, {CNN_CHANNELS1, 1, 3, 3}};
    out[1] = (ct_train_tensor_shape){"1.bias", 1, {CNN_CHANNELS1}};
    out[2] = (ct_train_tensor_shape){"4.weight", 4, {CNN_CHANNELS2, CNN_CHANNELS1, 3, 3}};
    out[3] = (ct_train_tensor_shape){"4.bias", 1, {CNN_CHANNELS2}};
    out[4] = (ct_train_tensor_shape){"8.weight", 2, {classes, CNN_CHANNELS2 * pooled * pooled}};
    out[5] = (ct_train_tensor_shape){"8.bias", 1, {classes}};
    return 6;
}
