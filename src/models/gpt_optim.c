/* nanoGPT's configure_optimizers: AdamW over two parameter groups, weight decay on every
 * parameter of 2 or more dims (the Linear weights and the embeddings: the products' weights) and
 * none on the rest (biases and LayerNorms), in named_parameters' order within each group. */
#include <stdlib.h>

#include "models/gpt_internal.h"

ct_optimizer *ct_gpt_configure_optimizers(ct_module *gpt, double lr, double weight_decay, double beta1, double beta2)
{
    const char *function = "ct_gpt_configure_optimizers";
    if (ct_gpt_model_of(gpt, function, NULL) != CT_OK) return NULL;
    ct_named_tensors *list = ct_module_named_parameters(gpt);
    if (!list) return NULL;
    ct_tensor **decay = malloc(sizeof *decay * (size_t)(list->count + 1));
    ct_tensor **no_decay = malloc(sizeof *no_decay * (size_t)(list->count + 1));
    ct_optimizer *optimizer = NULL;
    if (decay && no_decay) {
        int64_t d = 0, n = 0;
        for (int64_t i = 0; i < list->count; i++) {
            ct_tensor *p = list->tensors[i];
            if (ct_tensor_ndim(p) >= 2) decay[d++] = p;
            else no_decay[n++] = p;
        }
        ct_param_group groups[2] = {ct_param_group_of(decay, d), ct_param_group_of(no_decay, n)};
        groups[0].weight_decay = weight_decay;
        groups[1].weight_decay = 0.0;
        ct_adam_options options = ct_adamw_options_default(lr);
        options.beta1 = beta1;
        options.beta2 = beta2;
        options.eps = 1e-8;
        options.weight_decay = weight_decay;
        optimizer = ct_optim_adamw_groups(groups, n > 0 ? 2 : 1, &options);
    } else {
        ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory", function);
    }
    free(decay);
    free(no_decay);
    ct_named_tensors_free(list);
    return optimizer;
}
