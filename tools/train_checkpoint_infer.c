/* The model of a checkpoint without ctorch's metadata, such as a PyTorch user's
 * `safetensors.torch.save_file(model.state_dict(), path)`: read from its tensors' names and
 * shapes, which are those of PyTorch's nn.Sequential twin of each model (docs/command-line.md, "A model trained
 * in PyTorch"):
 *   mlp: 0.weight [256, F], 0.bias [256], 2.weight [C, 256], 2.bias [C]
 *   cnn: 1.weight [16, 1, 3, 3], 1.bias [16], 4.weight [32, 16, 3, 3], 4.bias [32],
 *        8.weight [C, 32 P P], 8.bias [C]; the image is (4 P) x (4 P), F = 16 P P
 * Only the sizes are taken here; loading the state dict strictly checks every shape after. */
#include <math.h>

#include "train.h"

#define MAX_SIZE (1 << 20) /* the bounds read_metadata puts on features and classes */

/* The size of dim of the tensor name in sd when it has ndim dims (else -1). */
static int64_t size_of(const ct_state_dict *sd, const char *name, int ndim, int dim)
{
    if (!ct_state_dict_contains(sd, name)) return -1;
    ct_tensor *t = ct_state_dict_get(sd, name);
    int64_t size = t && ct_tensor_ndim(t) == ndim ? ct_tensor_size(t, dim) : -1;
    ct_release(t);
    return size;
}

static ct_status mlp_sizes(const ct_state_dict *sd, const char *path, ct_train_checkpoint *out)
{
    out->features = size_of(sd, "0.weight", 2, 1);
    out->classes = size_of(sd, "2.weight", 2, 0);
    if (out->features < 1 || out->classes < 1)
        return ct_train_fail(CT_ERR_IO, "%s has no ctorch metadata, and its tensors are not the mlp's: it "
                             "needs 0.weight [256, features], 0.bias, 2.weight [classes, 256], 2.bias "
                             "(nn.Sequential(nn.Linear(features, 256), nn.ReLU(), nn.Linear(256, classes)))",
                             path);
    return CT_OK;
}

static ct_status cnn_sizes(const ct_state_dict *sd, const char *path, ct_train_checkpoint *out)
{
    int64_t flat = size_of(sd, "8.weight", 2, 1);
    out->classes = size_of(sd, "8.weight", 2, 0);
    int64_t pooled = flat > 0 && flat % 32 == 0 ? (int64_t)llround(sqrt((double)(flat / 32))) : 0;
    if (pooled < 1 || 32 * pooled * pooled != flat || out->classes < 1 || size_of(sd, "1.weight", 4, 0) < 0)
        return ct_train_fail(CT_ERR_IO, "%s has no ctorch metadata, and its tensors are not the cnn's: it "
                             "needs 1.weight [16, 1, 3, 3], 1.bias, 4.weight [32, 16, 3, 3], 4.bias, "
                             "8.weight [classes, 32 * P * P], 8.bias for images of 4P x 4P (docs/command-line.md: a model "
                             "trained in PyTorch)", path);
    out->features = 16 * pooled * pooled;
    return CT_OK;
}

ct_status ct_train_checkpoint_infer(const ct_state_dict *sd, const char *path, const ct_train_model *model,
                                    ct_train_checkpoint *out)
{
    if (model) {
        out->kind = *model;
    } else if (size_of(sd, "0.weight", 2, 1) > 0) {
        out->kind = CT_TRAIN_MLP;
    } else if (size_of(sd, "1.weight", 4, 0) > 0) {
        out->kind = CT_TRAIN_CNN;
    } else {
        return ct_train_fail(CT_ERR_IO, "%s has no '%s' in its __metadata__ (it was not saved by `ctorch "
                             "train --save`), and its tensors are neither the mlp's (0.weight, 0.bias, 2.weight, "
                             "2.bias) nor the cnn's (1.weight, 1.bias, 4.weight, 4.bias, 8.weight, 8.bias): the "
                             "model to rebuild is unknown (docs/command-line.md: a model trained in PyTorch)", path,
                             "ctorch.train.model");
    }
    ct_status status = out->kind == CT_TRAIN_CNN ? cnn_sizes(sd, path, out) : mlp_sizes(sd, path, out);
    if (status != CT_OK) return status;
    if (out->features > MAX_SIZE || out->classes > MAX_SIZE)
        return ct_train_fail(CT_ERR_IO, "%s: %lld features and %lld classes: more than ctorch eval takes (%d)",
                             path, (long long)out->features, (long long)out->classes, MAX_SIZE);
    out->split_seed = ct_train_config_default(out->kind).seed; /* `ctorch train`'s default split */
    out->inferred = true;
    return CT_OK;
}
