/* DataParallel's plan: the wrapped module tree walked depth first (a module's parameters, then its
 * buffers, then its children's), each distinct tensor given a place in one flat buffer per dtype.
 * Broadcasting a flat buffer is one copy per device however many tensors the module has (as
 * PyTorch's broadcast_coalesced); the replicas' tensors are views into their flat buffers. */
#include <stdlib.h>
#include <string.h>

#include "nn/data_parallel_internal.h"

typedef struct walk {
    const ct_dp_plan *plan; /* compare with it, or (NULL) only count */
    int modules, slots;
    bool matches;
} walk;

static ct_tensor *slot_tensor(const ct_module *m, int i)
{
    return i < m->parameters.count ? m->parameters.tensors[i] : m->buffers.tensors[i - m->parameters.count];
}

static bool same_layout(const ct_dp_layout *layout, const ct_tensor *t)
{
    return layout->dtype == t->dtype && layout->ndim == t->ndim &&
           !memcmp(layout->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

/* Counts the tree (plan NULL) or checks it against the plan: the same modules, tensors, dtypes
 * and shapes in the same order. */
static void walk_tree(walk *w, ct_module *m)
{
    int slots = m->parameters.count + m->buffers.count;
    const ct_dp_plan *p = w->plan;
    if (p) {
        if (w->modules >= p->module_count || p->modules[w->modules] != m ||
            p->slot_counts[w->modules] != slots || w->slots + slots > p->slot_count) {
            w->matches = false;
            return;
        }
        for (int i = 0; i < slots; i++) {
            const ct_tensor *t = slot_tensor(m, i);
            if (p->originals[w->slots + i] != t || !same_layout(&p->layouts[w->slots + i], t)) {
                w->matches = false;
                return;
            }
        }
    }
    w->modules++;
    w->slots += slots;
    for (int i = 0; i < m->child_count && w->matches; i++) walk_tree(w, m->children[i]);
}

/* The flat buffer of dtype (a new one at the end when there is none yet); -1 when full. */
static int group_of(ct_dp_plan *p, ct_dtype dtype)
{
    for (int g = 0; g < p->group_count; g++)
        if (p->group_dtypes[g] == dtype) return g;
    if (p->group_count == CT_DP_MAX_GROUPS) return -1;
    p->group_dtypes[p->group_count] = dtype;
    p->group_numel[p->group_count] = 0;
    return p->group_count++;
}

/* Fills the plan's arrays (sized by a counting walk). */
static void fill_plan(ct_dp_plan *p, ct_module *m, int *module_index, int *slot_index)
{
    int mi = (*module_index)++;
    p->modules[mi] = m;
    p->slot_counts[mi] = m->parameters.count + m->buffers.count;
    for (int i = 0; i < p->slot_counts[mi]; i++) {
        int s = (*slot_index)++;
        ct_tensor *t = slot_tensor(m, i);
        p->originals[s] = t;
        p->is_parameter[s] = i < m->parameters.count;
        p->layouts[s] = (ct_dp_layout){.dtype = t->dtype, .ndim = t->ndim};
        memcpy(p->layouts[s].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        p->unique[s] = s;
        for (int earlier = 0; earlier < s; earlier++)
            if (p->originals[earlier] == t) {
                p->unique[s] = earlier;
                break;
            }
        if (p->unique[s] != s) continue;
        int g = group_of(p, t->dtype); /* CT_DTYPE_COUNT <= CT_DP_MAX_GROUPS: never -1 */
        p->group[s] = g;
        p->offset[s] = p->group_numel[g];
        p->group_numel[g] += ct_numel(t);
    }
    for (int i = 0; i < m->child_count; i++) fill_plan(p, m->children[i], module_index, slot_index);
}

void ct_dp_plan_free(ct_dp_plan *plan)
{
    free(plan->modules);
    free(plan->slot_counts);
    free(plan->originals);
    free(plan->is_parameter);
    free(plan->unique);
    free(plan->layouts);
    free(plan->group);
    free(plan->offset);
    *plan = (ct_dp_plan){.version = plan->version};
}

ct_status ct_dp_plan_update(ct_dp_plan *plan, ct_module *module)
{
    walk check = {.plan = plan, .matches = true};
    walk_tree(&check, module);
    if (plan->modules && check.matches && check.modules == plan->module_count && check.slots == plan->slot_count)
        return CT_OK;
    walk count = {.matches = true};
    walk_tree(&count, module);
    ct_dp_plan_free(plan);
    plan->version++;
    size_t modules = (size_t)count.modules, slots = (size_t)count.slots + 1; /* never malloc(0) */
    plan->modules = malloc(sizeof *plan->modules * modules);
    plan->slot_counts = malloc(sizeof *plan->slot_counts * modules);
    plan->originals = malloc(sizeof *plan->originals * slots);
    plan->is_parameter = malloc(sizeof *plan->is_parameter * slots);
    plan->unique = malloc(sizeof *plan->unique * slots);
    plan->layouts = malloc(sizeof *plan->layouts * slots);
    plan->group = calloc(slots, sizeof *plan->group);
    plan->offset = calloc(slots, sizeof *plan->offset);
    if (!plan->modules || !plan->slot_counts || !plan->originals || !plan->is_parameter ||
        !plan->unique || !plan->layouts || !plan->group || !plan->offset) {
        ct_dp_plan_free(plan);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "DataParallel: no host memory to replicate the module");
    }
    plan->module_count = count.modules;
    plan->slot_count = count.slots;
    int module_index = 0, slot_index = 0;
    fill_plan(plan, module, &module_index, &slot_index);
    return CT_OK;
}

ct_tensor *ct_dp_plan_view(const ct_dp_plan *plan, ct_tensor *const *flats, int slot)
{
    const ct_dp_layout *layout = &plan->layouts[slot];
    const ct_tensor *flat = flats[plan->group[slot]];
    int64_t strides[CT_MAX_DIMS];
    ct_contiguous_strides(layout->shape, layout->ndim, strides);
    return ct_tensor_view_of(flat, layout->ndim, layout->shape, strides, flat->offset + plan->offset[slot]);
}

ct_status ct_dp_plan_alloc_flats(const ct_dp_plan *plan, ct_device device, ct_tensor **flats)
{
    for (int g = 0; g < plan->group_count; g++) {
        flats[g] = ct_tensor_alloc("DataParallel", device, plan->group_dtypes[g], &plan->group_numel[g], 1);
        if (!flats[g]) return ct_last_error();
    }
    return CT_OK;
}
