/* ctorch: PyTorch's device model in C. This header gathers the public API.
 *
 * Lifetimes. Every function that returns a ct_tensor * or a ct_module * returns a new reference;
 * arguments are borrowed unless the function's comment says it takes them over. What ends each
 * kind of object:
 *
 *   object                              ended by                        made by
 *   ct_tensor (refcounted)              ct_release, or a scope's pop    every op, ct_retain
 *   ct_module (refcounted)              ct_module_release (ct_module_   layer constructors,
 *                                       free is the same call)          ct_module_create, _retain
 *   ct_dataset                          ct_dataset_free                 ct_tensor_dataset, ...
 *   ct_data_loader                      ct_data_loader_free             ct_data_loader_create
 *   ct_distributed_sampler              ct_distributed_sampler_free     ct_distributed_sampler_create
 *   ct_optimizer                        ct_optimizer_free               ct_optim_sgd, ct_optim_adam, ...
 *   ct_lr_scheduler                     ct_lr_scheduler_free            the schedulers' constructors
 *   ct_grad_scaler                      ct_grad_scaler_free             ct_grad_scaler_new
 *   ct_graph                            ct_graph_free                   ct_graph_new
 *   ct_state_dict                       ct_state_dict_free              ct_state_dict_create, ct_load,
 *                                                                       ct_module_state_dict
 *   ct_named_tensors                    ct_named_tensors_free           ct_module_named_parameters, ...
 *   ct_named_modules                    ct_named_modules_free           ct_module_named_modules
 *   ct_stream, ct_event                 ct_stream_free, ct_event_free   ct_stream_create, ct_event_create
 *   strings (char *)                    free                            ct_tensor_to_string, ...
 *
 * `_release` drops one reference of a refcounted object; `_free` ends an object that has one
 * owner; all are NULL-safe. (ct_data_loader_destroy, ct_stream_destroy and ct_event_destroy are
 * older names of the `_free` calls.) Where the ownership of a module differs, its header says so
 * beside the function: ct_sequential, ct_module_list and ct_module_dict take over the modules
 * given; registering a child, parameter or buffer takes a reference of the module's own (the
 * caller keeps its own); ct_module_child and ct_module_child_at return borrowed modules;
 * ct_module_parameter and ct_module_buffer return new references. */
#ifndef CTORCH_H
#define CTORCH_H

#include "ctorch/core.h"
#include "ctorch/device.h"
#include "ctorch/cpu.h"
#include "ctorch/alloc.h"
#include "ctorch/tensor.h"
#include "ctorch/ops.h"
#include "ctorch/stream.h"
#include "ctorch/graph.h"
#include "ctorch/autograd.h"
#include "ctorch/data.h"
#include "ctorch/io.h"
#include "ctorch/nn_functional.h"
#include "ctorch/nn.h"
#include "ctorch/optim.h"
#include "ctorch/amp.h"
#include "ctorch/distributed.h"
#include "ctorch/parallel.h"
#include "ctorch/models.h"

#endif
