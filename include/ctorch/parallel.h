/* ctorch parallel: DataParallel (torch.nn.DataParallel): one process drives several devices of
 * one type, a thread per device; and choosing those devices.
 *
 * Each forward of the wrapper
 *   1. scatters the batch along dim 0 into chunks as torch.chunk makes them (ceil(N / count)
 *      rows each, the last may be smaller; a batch of fewer chunks than devices uses only the
 *      first devices: 5 rows over 2 devices are 3 + 2, and 1 row, or none, runs on devices[0]
 *      alone: in the calling thread, as the plain module would);
 *   2. replicates the wrapped module onto each further device: a shallow copy of the module tree
 *      (the same kinds, forwards and module data) whose parameters and buffers are copies on that
 *      device, views of one flat buffer per dtype. The buffers are made once and refreshed in
 *      place at every forward with one copy each from devices[0] (PyTorch's broadcast_coalesced,
 *      without allocating: no device allocation once warm). devices[0] runs the wrapped module
 *      itself;
 *   3. runs the replicas in parallel, one thread per device. ctorch's current device, current
 *      stream and grad mode are per thread: every worker sets its replica's device
 *      (ct_set_device), takes the caller's current stream of each device involved and the
 *      caller's grad mode (so ct_no_grad_push around a forward holds in the workers too);
 *   4. gathers the outputs on the output device, concatenated along dim 0 (a 0-d output of a
 *      replica counts as one row, as PyTorch's gather does with a warning).
 * All of it is recorded for autograd: the gather's backward scatters the output gradient back to
 * the replicas, each replicated parameter's backward (BroadcastBackward) moves its gradient to
 * devices[0], where the engine sums the replicas' gradients into the wrapped module's parameters
 * (the reduce-add), and the scatter's backward gathers the input's gradient. The backward itself
 * runs in the thread that calls ct_backward, one device after the other.
 *
 * Rules, as PyTorch's:
 * - At each forward, every parameter and buffer of the wrapped module must be on devices[0]
 *   (move it with ct_module_to before or after wrapping); otherwise the forward fails naming the
 *   tensor, its device and devices[0].
 * - Buffers are copied to the replicas but not back: what a replica changes in its copies
 *   (BatchNorm's running statistics in training mode) is dropped, and only the changes made on
 *   devices[0] (by the wrapped module itself, on the first chunk) are kept.
 * - A module's forward must find its tensors by name (ct_module_parameter, ct_module_buffer, as
 *   the built-in layers do), not keep tensor pointers in its module data: replicas share the data
 *   with the wrapped module, and only their tensor slots are their own. For the same reason a
 *   forward must not change its module data (replicas run it concurrently).
 * - The replicas' parameter copies are overwritten by the next forward: backpropagate a forward
 *   before running the next one.
 * - Train and eval mode follow the wrapped module's (ct_module_train on the wrapper sets both).
 *   ct_module_to and ct_module_to_dtype on the wrapper convert the wrapped module; the replicas
 *   follow at the next forward (as they follow tensors registered after wrapping).
 * - One forward at a time per wrapper (as with any module); the input may be on any device.
 * - Random ops (dropout) draw from each device's own generator, so replicas do not interleave.
 *
 * The wrapper's state dict has the `module.` prefix (its child is named "module", as PyTorch's);
 * ct_state_dict_strip_prefix(sd, "module.") makes it load into the plain module. Optimizers
 * built on the wrapper or on the wrapped module update the same parameters. */
#ifndef CTORCH_PARALLEL_H
#define CTORCH_PARALLEL_H

#include "ctorch/device.h"
#include "ctorch/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Wraps module (the wrapper takes its own reference, as ct_module_register_module; the caller
 * keeps its own) to run over devices[0..count) of one device type, each listed once.
 * count 0 (devices may then be NULL) means every visible device of output_device's type, in index
 * order. output_device receives the gathered outputs; an index of -1 ("opencl") means devices[0]
 * when the type is the devices' type, and the current device of its type otherwise (the cpu, or
 * a device of another type, is allowed). Errors: a device that does not exist (named), an empty
 * list, a device listed twice, devices of different types, more than 64 devices. */
ct_module *ct_data_parallel(ct_module *module, const ct_device *devices, int count,
                            ct_device output_device);

/* The devices of type ordered by free memory, most first (ties by index): the PyTorch tutorial's
 * get_gpu_memory + argsort, so out[0] is the main device to choose. Writes min(device count, max)
 * devices and their number into *count. Free memory is ct_mem_get_info's (an estimate where the
 * driver has no query: see ct_device_props). CT_ERR_UNAVAILABLE when the type has no device. */
ct_status ct_devices_by_free_memory(ct_device_type type, ct_device *out, int max, int *count);

/* Parses a comma-separated list of devices ("opencl:0,opencl:1", spaces allowed around names)
 * into out[0..max), each checked as ct_device_parse checks it (the error names the entry and
 * what is available). Writes the number of devices into *count. */
ct_status ct_device_list_parse(const char *text, ct_device *out, int max, int *count);

#ifdef __cplusplus
}
#endif
#endif
