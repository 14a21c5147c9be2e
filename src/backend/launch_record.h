/* Graph capture where the backend has none of its own (the CPU, OpenCL): the launches and matrix
 * products that join a capture are recorded, with their buffers, parameter block and work shape,
 * and a replay hands them to the backend again in order, without the op layer's work (argument
 * checks, broadcasting, kernel choice, allocation, autograd). The buffers are the capture's: the
 * graph keeps their memory alive (its private pool, src/alloc/graph_pool.c). */
#ifndef CT_LAUNCH_RECORD_H
#define CT_LAUNCH_RECORD_H

#include "backend/backend.h"

typedef struct ct_launch_record ct_launch_record;

ct_launch_record *ct_launch_record_new(void);
void ct_launch_record_free(ct_launch_record *record);
/* Appends a launch (ct_backend_launch's arguments), a product, a convolution, a pooling or an
 * attention; CT_ERR_OUT_OF_MEMORY when the
 * host has no room for it. */
ct_status ct_launch_record_kernel(ct_launch_record *record, ct_kernel_id kernel, void *const buffers[],
                                  const ct_kparams *params, long work, int group_size);
ct_status ct_launch_record_gemm(ct_launch_record *record, const ct_gemm_args *args);
ct_status ct_launch_record_conv2d(ct_launch_record *record, const ct_conv2d_args *args);
ct_status ct_launch_record_pool2d(ct_launch_record *record, const ct_pool2d_args *args);
ct_status ct_launch_record_attention(ct_launch_record *record, const ct_attention_args *args);
/* How many launches and products it holds. */
long ct_launch_record_length(const ct_launch_record *record);
/* Runs them all on a resolved device's backend, on stream (a backend handle; NULL: default). */
ct_status ct_launch_record_replay(const ct_launch_record *record, ct_device device, void *stream);

#endif
