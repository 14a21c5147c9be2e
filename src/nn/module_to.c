/* ct_module_to: every parameter, buffer and gradient of a module tree moves to a device in place.
 *
 * "In place" means that each tensor object keeps its identity and takes the storage of a moved
 * copy, as PyTorch's Module._apply sets param.data: whoever holds the parameter (the module, an
 * optimizer, the caller) sees it on the new device, still a leaf that requires grad. Views made
 * earlier keep the old storage, as views of param.data do in PyTorch. All copies are made
 * before anything is swapped, so a failure (no such device, out of memory) changes nothing. */
#include <stdlib.h>
#include <string.h>

#include "nn/module_internal.h"

typedef struct move {
    ct_tensor *tensor; /* the module's tensor (borrowed) */
    ct_tensor *moved;  /* its copy on the target device */
    ct_tensor *grad;   /* its gradient's copy, or NULL */
} move;

typedef struct move_list {
    move *items;
    size_t count, capacity;
    ct_device device;
} move_list;

static bool listed(const move_list *list, const ct_tensor *t)
{
    for (size_t i = 0; i < list->count; i++)
        if (list->items[i].tensor == t) return true;
    return false;
}

static ct_status add_move(move_list *list, ct_tensor *t)
{
    if (listed(list, t) || ct_device_equal(t->storage->device, list->device)) return CT_OK;
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? list->capacity * 2 : 16;
        move *items = realloc(list->items, sizeof *items * capacity);
        if (!items) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_module_to: no host memory");
        list->items = items;
        list->capacity = capacity;
    }
    move *m = &list->items[list->count++];
    m->tensor = t;
    m->grad = NULL;
    m->moved = ct_to(t, list->device);
    if (!m->moved) return ct_last_error();
    if (t->grad) {
        m->grad = ct_to(t->grad, list->device);
        if (!m->grad) return ct_last_error();
    }
    return CT_OK;
}

static ct_status copy_tensors(ct_module *m, const char *prefix, void *context)
{
    (void)prefix;
    move_list *list = context;
    ct_status status = CT_OK;
    for (int i = 0; status == CT_OK && i < m->parameters.count; i++)
        status = add_move(list, m->parameters.tensors[i]);
    for (int i = 0; status == CT_OK && i < m->buffers.count; i++)
        status = add_move(list, m->buffers.tensors[i]);
    return status;
}

/* t takes moved's storage and geometry; t's identity, dtype, shape and autograd state stay. */
static void take_storage(ct_tensor *t, ct_tensor *moved)
{
    ct_storage *old = t->storage;
    ct_storage_retain(moved->storage);
    t->storage = moved->storage;
    memcpy(t->strides, moved->strides, sizeof t->strides);
    t->offset = moved->offset;
    ct_storage_release(old);
}

ct_status ct_module_to(ct_module *m, ct_device device)
{
    if (!m) return ct_null_argument("ct_module_to", "m"), ct_last_error();
    ct_device resolved;
    ct_status status = ct_device_resolve(device, &resolved);
    if (status != CT_OK) return status;
    move_list list = {.device = resolved};
    ct_api_enter(); /* the copies are ctorch's own */
    status = ct_module_visit(m, copy_tensors, &list);
    for (size_t i = 0; i < list.count; i++) {
        move *mv = &list.items[i];
        if (status == CT_OK) {
            take_storage(mv->tensor, mv->moved);
            if (mv->grad) {
                ct_release(mv->tensor->grad);
                mv->tensor->grad = mv->grad;
                mv->grad = NULL;
            }
        }
        ct_release(mv->moved);
        ct_release(mv->grad);
    }
    ct_api_return(NULL);
    free(list.items);
    return status;
}
