/* TEMPORARY until the optimizer's parameter groups land: one group. */
#include "models/gpt_internal.h"

ct_optimizer *ct_gpt_configure_optimizers(ct_module *gpt, double lr, double weight_decay, double beta1, double beta2)
{
    if (!ct_gpt_model_of(gpt, "ct_gpt_configure_optimizers")) return NULL;
    ct_adam_options o = ct_adamw_options_default(lr);
    o.weight_decay = weight_decay;
    o.beta1 = beta1;
    o.beta2 = beta2;
    return ct_optim_adamw(gpt, &o);
}
