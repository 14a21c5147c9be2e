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
    ct_device device;  /* where every tensor goes, unless keep_device */
    bool keep_device;
    int dtype;         /* the floating dtype floating tensors take, or -1 to keep every dtype */
} move_list;

static ct_device target_device(const move_list *list, const ct_tensor *t)
{
    return list->keep_device ? t->storage->device : list->device;
}

/* dtype is -1 (keep) or the floating dtype for t when t is floating (integer state keeps its
 * dtype, as PyTorch's module.double() does). */
static ct_dtype target_dtype(const move_list *list, const ct_tensor *t)
{
    return list->dtype >= 0 && ct_dtype_is_floating(t->dtype) ? (ct_dtype)list->dtype : t->dtype;
}

static ct_tensor *converted(const move_list *list, const ct_tensor *t)
{
    ct_to_options options = ct_to_options_default(target_device(list, t));
    options.dtype = target_dtype(list, t);
    return ct_to_with(t, &options);
}

static bool listed(const move_list *list, const ct_tensor *t)
{
    for (size_t i = 0; i < list->count; i++)
        if (list->items[i].tensor == t) return true;
    return false;
}

static ct_status add_move(move_list *list, ct_tensor *t)
{
    if (listed(list, t) ||
        (ct_device_equal(t->storage->device, target_device(list, t)) && target_dtype(list, t) == t->dtype))
        return CT_OK;
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
    m->moved = converted(list, t);
    if (!m->moved) return ct_last_error();
    if (t->grad) {
        m->grad = converted(list, t->grad);
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

/* t takes moved's storage, dtype and geometry; t's identity, shape and autograd state stay. */
static void take_storage(ct_tensor *t, ct_tensor *moved)
{
    ct_storage *old = t->storage;
    ct_storage_retain(moved->storage);
    t->storage = moved->storage;
    t->dtype = moved->dtype;
    memcpy(t->strides, moved->strides, sizeof t->strides);
    t->offset = moved->offset;
    ct_storage_release(old);
}

/* device NULL keeps every tensor's device. */
static ct_status move_tree(ct_module *m, const ct_device *device, int dtype)
{
    ct_device resolved = CT_DEVICE_CPU;
    ct_status status = device ? ct_device_resolve(*device, &resolved) : CT_OK;
    if (status != CT_OK) return status;
    move_list list = {.device = resolved, .keep_device = !device, .dtype = dtype};
    ct_api_enter(); /* the copies are ctorch's own */
    ct_no_grad_push(); /* and not part of any graph */
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
    ct_no_grad_pop();
    ct_api_return(NULL);
    free(list.items);
    return status;
}

ct_status ct_module_to(ct_module *m, ct_device device)
{
    if (!m) return ct_null_argument("ct_module_to", "m"), ct_last_error();
    return move_tree(m, &device, -1);
}

ct_status ct_module_to_dtype(ct_module *m, ct_dtype dtype)
{
    if (!m) return ct_null_argument("ct_module_to_dtype", "m"), ct_last_error();
    if (!ct_dtype_is_valid((int)dtype) || !ct_dtype_is_floating(dtype))
        return ct_error(CT_ERR_DTYPE, "ct_module_to_dtype: %s is not a floating dtype; a module's "
                        "floating tensors convert to float32, float64, float16 or bfloat16", ct_dtype_name(dtype));
    return move_tree(m, NULL, (int)dtype);
}
