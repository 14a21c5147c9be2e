/* The module record, shared by the nn layer's files (the module base, the layers) and by optim. */
#ifndef CT_NN_MODULE_INTERNAL_H
#define CT_NN_MODULE_INTERNAL_H

#include <stdatomic.h>

#include "ctorch/autograd.h"
#include "ctorch/nn.h"
#include "ctorch/ops.h"
#include "tensor/tensor_internal.h"

/* Named tensors of one module, in registration order. */
typedef struct ct_tensor_slots {
    int count, capacity;
    char **names;
    ct_tensor **tensors;
} ct_tensor_slots;

struct ct_module {
    atomic_int refcount;
    char *kind;
    ct_module_forward_fn forward;
    ct_module_forward_many_fn forward_many; /* N tensors in, M out (NULL: forward's one and one) */
    void *data;
    void (*free_data)(void *data);
    char *(*describe)(const ct_module *m);
    bool training;
    ct_tensor_slots parameters;
    ct_tensor_slots buffers;
    int child_count, child_capacity;
    char **child_names;
    ct_module **children;
};

/* A module's own tensor by name (borrowed), or NULL; no error recorded. The layers use it. */
ct_tensor *ct_module_own_parameter(const ct_module *m, const char *name);
ct_tensor *ct_module_own_buffer(const ct_module *m, const char *name);

/* Makes a floating leaf of shape on the cpu, drawn uniformly from [-bound, bound) with ct_rand
 * (the global seed), and registers it as parameter `name`. */
ct_status ct_module_add_uniform_parameter(ct_module *m, const char *name, const int64_t *shape,
                                          int ndim, double bound);

/* A wrapper module (DataParallel, DistributedDataParallel) around module, which it holds as its
 * child "module" and whose training mode it takes. data is freed with free_data, also when
 * making the wrapper fails (NULL then). */
ct_module *ct_module_wrap(const char *kind, ct_module_forward_fn forward, void *data, void (*free_data)(void *data),
                          ct_module *module);

/* Is m the built-in nn.Linear (nn.ReLU), its forward unchanged? */
bool ct_module_is_linear(const ct_module *m);
bool ct_module_is_relu(const ct_module *m);
/* An nn.Linear and the nn.ReLU after it, run as one op (ct_linear_relu_apply): the same values
 * and gradients as the two forwards one after the other, and the Linear's errors. */
ct_tensor *ct_linear_relu_forward(ct_module *linear, const ct_tensor *x);

/* ct_module_forward of a module with a forward of several inputs and outputs: one in, one out. */
ct_tensor *ct_module_forward_one_of_many(ct_module *m, const ct_tensor *input);

/* Visits every module of the tree depth first (m first), with its dotted prefix ("" for m,
 * "encoder." for a child named encoder). Stops at the first status other than CT_OK. */
typedef ct_status (*ct_module_visit_fn)(ct_module *m, const char *prefix, void *context);
ct_status ct_module_visit(const ct_module *m, ct_module_visit_fn visit, void *context);

#endif
