/* DataParallel's replicas: a shallow copy of the wrapped module tree per further device, whose
 * tensor slots hold views of flat buffers on that device. The flat buffers are allocated once
 * and refreshed in place at every forward, one copy per buffer from the source on devices[0]
 * (as PyTorch's broadcast_coalesced, but without allocating). A replicated parameter is given to
 * the replica as a BroadcastBackward output: a view of its store whose gradient goes back to the
 * parameter's device, where the engine adds up the replicas' gradients in the parameter's
 * .grad (the reduce-add). */
#include <stdlib.h>
#include <string.h>

#include "nn/data_parallel_internal.h"
#include "ops/ops_autograd.h"

static ct_status no_memory(void)
{
    return ct_error(CT_ERR_OUT_OF_MEMORY, "DataParallel: no host memory to replicate the module");
}

/* ---- the source: the wrapped module's tensors packed on devices[0] ---- */

void ct_dp_source_free(ct_dp_source *source)
{
    for (int g = 0; g < CT_DP_MAX_GROUPS; g++) ct_release(source->flats[g]);
    for (int s = 0; source->parts && s < source->slot_count; s++) ct_release(source->parts[s]);
    free(source->parts);
    *source = (ct_dp_source){.device = source->device};
}

static ct_status source_build(ct_dp_source *source, const ct_dp_plan *plan)
{
    ct_dp_source_free(source);
    source->slot_count = plan->slot_count;
    source->parts = calloc((size_t)plan->slot_count + 1, sizeof *source->parts);
    if (!source->parts) return no_memory();
    ct_status status = ct_dp_plan_alloc_flats(plan, source->device, source->flats);
    for (int s = 0; status == CT_OK && s < plan->slot_count; s++) {
        if (plan->unique[s] != s) continue;
        source->parts[s] = ct_dp_plan_view(plan, source->flats, s);
        if (!source->parts[s]) status = ct_last_error();
    }
    if (status != CT_OK) {
        ct_dp_source_free(source);
        return status;
    }
    source->version = plan->version;
    return CT_OK;
}

ct_status ct_dp_source_refresh(ct_dp_source *source, const ct_dp_plan *plan)
{
    ct_status status = source->version == plan->version && source->parts ? CT_OK : source_build(source, plan);
    /* Copies on devices[0] itself: queued kernels, no wait. */
    for (int s = 0; status == CT_OK && s < plan->slot_count; s++)
        if (plan->unique[s] == s) status = ct_copy_(source->parts[s], plan->originals[s]);
    return status;
}

/* ---- building a replica ---- */

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
        to->count = i + 1; /* the tensor is set later; a NULL one is released as nothing */
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
    c->forward_many = m->forward_many;
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
        return status == CT_ERR_OUT_OF_MEMORY ? (no_memory(), NULL) : NULL;
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
    for (int g = 0; g < CT_DP_MAX_GROUPS; g++) ct_release(r->flats[g]);
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
    int index = 0;
    ct_status status = r->modules && r->slots && r->stores && r->outputs ? CT_OK : no_memory();
    if (status == CT_OK) {
        r->module = clone_tree(plan->modules[0], r->modules, &index);
        if (!r->module) status = ct_last_error();
    }
    if (status == CT_OK) status = ct_dp_plan_alloc_flats(plan, r->device, r->flats);
    if (status == CT_OK) {
        int s = 0;
        for (int mi = 0; mi < plan->module_count; mi++) {
            ct_module *c = r->modules[mi];
            for (int i = 0; i < c->parameters.count; i++) r->slots[s++] = &c->parameters.tensors[i];
            for (int i = 0; i < c->buffers.count; i++) r->slots[s++] = &c->buffers.tensors[i];
        }
    }
    for (int s = 0; status == CT_OK && s < plan->slot_count; s++) {
        int u = plan->unique[s];
        if (u == s) r->stores[s] = ct_dp_plan_view(plan, r->flats, s);
        if (!r->stores[u]) status = ct_last_error();
        else set_slot(r->slots[s], r->stores[u]);
    }
    if (status != CT_OK) {
        ct_dp_replica_free(r);
        return status;
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

ct_status ct_dp_replica_broadcast(ct_dp_replica *r, const ct_dp_plan *plan, const ct_dp_source *source)
{
    for (int mi = 0; mi < plan->module_count; mi++) r->modules[mi]->training = plan->modules[mi]->training;
    ct_status status = CT_OK;
    for (int g = 0; status == CT_OK && g < plan->group_count; g++)
        status = ct_copy_(r->flats[g], source->flats[g]);
    bool recording = ct_is_grad_enabled();
    for (int u = 0; status == CT_OK && recording && u < plan->slot_count; u++) {
        ct_tensor *original = plan->originals[u];
        if (plan->unique[u] != u || !plan->is_parameter[u] || !original->requires_grad) continue;
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
