/* DataParallel's replicas: a shallow copy of the wrapped module tree per further device, whose
 * tensor slots hold copies on that device. The copies (stores) are allocated once and refreshed
 * in place at every forward, as PyTorch's Broadcast refreshes replicas (but without allocating).
 * A replicated parameter is given to the replica as a BroadcastBackward output: a view of its
 * store whose gradient goes back to the parameter's device, where the engine adds up the
 * replicas' gradients in the parameter's .grad. */
#include <stdlib.h>
#include <string.h>

#include "nn/data_parallel_internal.h"
#include "ops/ops_autograd.h"

/* ---- the plan: the wrapped tree's walk ---- */

typedef struct walk {
    const ct_dp_plan *plan; /* compare with it, or (NULL) count into the fields below */
    int modules, slots;
    bool matches;
} walk;

/* Counts the tree (plan NULL) or checks it against the plan, in walk order. */
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
            const ct_tensor *t = i < m->parameters.count ? m->parameters.tensors[i]
                                                         : m->buffers.tensors[i - m->parameters.count];
            if (p->originals[w->slots + i] != t) {
                w->matches = false;
                return;
            }
        }
    }
    w->modules++;
    w->slots += slots;
    for (int i = 0; i < m->child_count && w->matches; i++) walk_tree(w, m->children[i]);
}

/* Fills the plan's arrays (sized by a counting walk). */
static void fill_plan(ct_dp_plan *p, ct_module *m, int *module_index, int *slot_index)
{
    int mi = (*module_index)++;
    p->modules[mi] = m;
    p->slot_counts[mi] = m->parameters.count + m->buffers.count;
    for (int i = 0; i < p->slot_counts[mi]; i++) {
        bool parameter = i < m->parameters.count;
        int s = (*slot_index)++;
        p->originals[s] = parameter ? m->parameters.tensors[i] : m->buffers.tensors[i - m->parameters.count];
        p->is_parameter[s] = parameter;
        p->unique[s] = s;
        for (int earlier = 0; earlier < s; earlier++)
            if (p->originals[earlier] == p->originals[s]) {
                p->unique[s] = earlier;
                break;
            }
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
    *plan = (ct_dp_plan){0};
}

ct_status ct_dp_plan_update(ct_dp_plan *plan, ct_module *module)
{
    walk check = {.plan = plan, .matches = true};
    walk_tree(&check, module);
    if (plan->modules && check.matches && check.modules == plan->module_count && check.slots == plan->slot_count)
        return CT_OK;
    walk count = {.matches = true};
    walk_tree(&count, module);
    int version = plan->version + 1;
    ct_dp_plan_free(plan);
    plan->version = version;
    size_t modules = (size_t)count.modules, slots = (size_t)count.slots + 1; /* never malloc(0) */
    plan->modules = malloc(sizeof *plan->modules * modules);
    plan->slot_counts = malloc(sizeof *plan->slot_counts * modules);
    plan->originals = malloc(sizeof *plan->originals * slots);
    plan->is_parameter = malloc(sizeof *plan->is_parameter * slots);
    plan->unique = malloc(sizeof *plan->unique * slots);
    if (!plan->modules || !plan->slot_counts || !plan->originals || !plan->is_parameter || !plan->unique) {
        ct_dp_plan_free(plan);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "DataParallel: no host memory to replicate the module");
    }
    plan->module_count = count.modules;
    plan->slot_count = count.slots;
    int module_index = 0, slot_index = 0;
    fill_plan(plan, module, &module_index, &slot_index);
    return CT_OK;
}

/* ---- building a replica ---- */

/* A store on device for original: a contiguous tensor of its shape and dtype, not in any graph. */
static ct_tensor *new_store(const ct_tensor *original, ct_device device)
{
    return ct_tensor_alloc("DataParallel", device, original->dtype, original->shape, original->ndim);
}

static ct_status copy_names(ct_tensor_slots *to, const ct_tensor_slots *from)
{
    if (from->count == 0) return CT_OK;
    to->names = calloc((size_t)from->count, sizeof *to->names);
    to->tensors = calloc((size_t)from->count, sizeof *to->tensors);
    if (!to->names || !to->tensors) return CT_ERR_OUT_OF_MEMORY;
    to->capacity = from->count;
    for (int i = 0; i < from->count; i++) {
        to->names[i] = strdup(from->names[i]);
        if (!to->names[i]) return CT_ERR_OUT_OF_MEMORY;
        to->count = i + 1; /* the tensor is set below; a NULL one is released as nothing */
    }
    return CT_OK;
}

/* A copy of m's tree (same kind, forward, data, describe; no free_data: the data stays the
 * wrapped module's), with empty tensor slots named as m's; its modules are listed in walk order. */
static ct_module *clone_tree(const ct_module *m, ct_module **list, int *index)
{
    ct_module *c = ct_module_create(m->kind, m->forward, m->data, NULL);
    if (!c) return NULL;
    list[(*index)++] = c;
    c->describe = m->describe;
    c->training = m->training;
    ct_status status = copy_names(&c->parameters, &m->parameters);
    if (status == CT_OK) status = copy_names(&c->buffers, &m->buffers);
    for (int i = 0; status == CT_OK && i < m->child_count; i++) {
        ct_module *child = clone_tree(m->children[i], list, index);
        status = child ? ct_module_register_module(c, m->child_names[i], child) : ct_last_error();
        ct_module_release(child);
    }
    if (status != CT_OK) {
        ct_module_release(c);
        return status == CT_ERR_OUT_OF_MEMORY
                   ? ct_error_null(status, "DataParallel: no host memory to replicate the module")
                   : NULL;
    }
    return c;
}

static void set_slot(ct_tensor **slot, ct_tensor *t)
{
    if (*slot == t) return;
    atomic_fetch_add(&t->refcount, 1);
    ct_release(*slot);
    *slot = t;
}

void ct_dp_replica_free(ct_dp_replica *r)
{
    ct_module_release(r->module);
    for (int s = 0; r->stores && s < r->slot_count; s++) ct_release(r->stores[s]);
    for (int s = 0; r->outputs && s < r->slot_count; s++) ct_release(r->outputs[s]);
    free(r->modules);
    free(r->slots);
    free(r->stores);
    free(r->outputs);
    *r = (ct_dp_replica){.device = r->device};
}

ct_status ct_dp_replica_build(ct_dp_replica *r, const ct_dp_plan *plan)
{
    if (r->module && r->version == plan->version) return CT_OK;
    ct_dp_replica_free(r);
    r->slot_count = plan->slot_count;
    size_t slots = (size_t)plan->slot_count + 1;
    r->modules = calloc((size_t)plan->module_count, sizeof *r->modules);
    r->slots = calloc(slots, sizeof *r->slots);
    r->stores = calloc(slots, sizeof *r->stores);
    r->outputs = calloc(slots, sizeof *r->outputs);
    if (!r->modules || !r->slots || !r->stores || !r->outputs) {
        ct_dp_replica_free(r);
        return ct_error(CT_ERR_OUT_OF_MEMORY, "DataParallel: no host memory to replicate the module");
    }
    int index = 0;
    r->module = clone_tree(plan->modules[0], r->modules, &index);
    if (!r->module) {
        ct_dp_replica_free(r);
        return ct_last_error();
    }
    int s = 0;
    for (int mi = 0; mi < plan->module_count; mi++) {
        ct_module *c = r->modules[mi];
        for (int i = 0; i < c->parameters.count; i++) r->slots[s++] = &c->parameters.tensors[i];
        for (int i = 0; i < c->buffers.count; i++) r->slots[s++] = &c->buffers.tensors[i];
    }
    for (s = 0; s < plan->slot_count; s++) {
        int u = plan->unique[s];
        if (u == s) r->stores[s] = new_store(plan->originals[s], r->device);
        if (!r->stores[u]) {
            ct_dp_replica_free(r);
            return ct_last_error();
        }
        set_slot(r->slots[s], r->stores[u]);
    }
    r->version = plan->version;
    return CT_OK;
}

/* ---- every forward: refresh the values, record the broadcast ---- */

/* The gradient of a replicated parameter goes back to the parameter's device (and dtype). */
static ct_status broadcast_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    if (!ct_node_needs_grad(node, 0)) return CT_OK;
    ct_to_options options = ct_to_options_default(node->inputs[0].device);
    options.dtype = (int)node->inputs[0].dtype;
    grads[0] = ct_to_with(grad, &options);
    return grads[0] ? CT_OK : ct_last_error();
}

/* A view of store that is the output of broadcasting original (in the graph). */
static ct_tensor *broadcast_output(ct_tensor *store, ct_tensor *original)
{
    ct_tensor *out = ct_tensor_view_of(store, store->ndim, store->shape, store->strides, store->offset);
    if (!out) return NULL;
    const ct_tensor *inputs[1] = {original};
    if (!ct_autograd_record(out, "BroadcastBackward", broadcast_backward, inputs, 1)) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static bool same_layout(const ct_tensor *a, const ct_tensor *b)
{
    return a->dtype == b->dtype && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

/* The store of unique slot u fits its original again (after ct_module_to_dtype, say). */
static ct_status refit_store(ct_dp_replica *r, const ct_dp_plan *plan, int u)
{
    ct_tensor *store = new_store(plan->originals[u], r->device);
    if (!store) return ct_last_error();
    for (int s = u; s < plan->slot_count; s++)
        if (plan->unique[s] == u) set_slot(r->slots[s], store);
    ct_release(r->stores[u]);
    r->stores[u] = store;
    return CT_OK;
}

ct_status ct_dp_replica_broadcast(ct_dp_replica *r, const ct_dp_plan *plan)
{
    for (int mi = 0; mi < plan->module_count; mi++) r->modules[mi]->training = plan->modules[mi]->training;
    bool recording = ct_is_grad_enabled();
    ct_status status = CT_OK;
    for (int u = 0; status == CT_OK && u < plan->slot_count; u++) {
        if (plan->unique[u] != u) continue;
        ct_tensor *original = plan->originals[u];
        if (!same_layout(r->stores[u], original)) status = refit_store(r, plan, u);
        if (status == CT_OK) status = ct_copy_(r->stores[u], original);
        if (status != CT_OK || !recording || !plan->is_parameter[u] || !original->requires_grad) continue;
        r->outputs[u] = broadcast_output(r->stores[u], original);
        if (!r->outputs[u]) {
            status = ct_last_error();
            break;
        }
        for (int s = u; s < plan->slot_count; s++)
            if (plan->unique[s] == u) set_slot(r->slots[s], r->outputs[u]);
    }
    return status;
}

void ct_dp_replica_reset(ct_dp_replica *r, const ct_dp_plan *plan)
{
    if (!r->module) return;
    for (int s = 0; s < plan->slot_count; s++) {
        set_slot(r->slots[s], r->stores[plan->unique[s]]);
        ct_release(r->outputs[s]);
        r->outputs[s] = NULL;
    }
}
