#include "kernels/kernel_ids.h"

#define CT_KERNEL_NAME_ENTRY(name) [CT_K_##name] = #name,
static const char *const kernel_names[CT_KERNEL_COUNT] = {
    [CT_K_NONE] = "none",
    CT_KERNEL_LIST(CT_KERNEL_NAME_ENTRY)
};

const char *ct_kernel_name(ct_kernel_id id)
{
    return (id >= 0 && id < CT_KERNEL_COUNT) ? kernel_names[id] : "invalid";
}
