/* The distributed calls of a ctorch built without MPI: each says so. (CMake compiles this file
 * instead of the MPI ones when CTORCH_WITH_MPI is OFF or MPI was not found.) */
#include <stdio.h>
#include <stdlib.h>

#include "core/core_internal.h"
#include "ctorch/distributed.h"
#include "distributed/dist_autograd.h"

static ct_status not_built(const char *function)
{
    return ct_error(CT_ERR_NOT_COMPILED, "%s: ctorch was built without MPI; install MPI (Debian: "
                    "openmpi-bin libopenmpi-dev) and configure with -DCTORCH_WITH_MPI=ON", function);
}

ct_status ct_dist_init(void) { return not_built("ct_dist_init"); }
/* Nothing to leave, as in an MPI build before ct_dist_init. */
ct_status ct_dist_finalize(void) { return CT_OK; }
bool ct_dist_is_initialized(void) { return false; }

void ct_dist_abort(int exit_code)
{
    fflush(stdout);
    fflush(stderr);
    exit(exit_code);
}
ct_status ct_dist_set_timeout(double seconds)
{
    (void)seconds;
    return not_built("ct_dist_set_timeout");
}
double ct_dist_timeout(void) { return 600.0; }

ct_status ct_dist_agree_on_settings(const ct_dist_setting *settings, int count)
{
    (void)settings;
    (void)count;
    return not_built("ct_dist_agree_on_settings");
}

int ct_dist_rank(void) { return not_built("ct_dist_rank"), -1; }
int ct_dist_world_size(void) { return not_built("ct_dist_world_size"), -1; }
int ct_dist_local_rank(void) { return not_built("ct_dist_local_rank"), -1; }
int ct_dist_local_world_size(void) { return not_built("ct_dist_local_world_size"), -1; }

ct_status ct_dist_device(ct_device *out)
{
    (void)out;
    return not_built("ct_dist_device");
}

ct_status ct_dist_device_from(const char *map, ct_device *out)
{
    (void)map;
    (void)out;
    return not_built("ct_dist_device_from");
}

ct_status ct_dist_barrier(void) { return not_built("ct_dist_barrier"); }

ct_status ct_dist_all_reduce(ct_tensor *t, ct_reduce_op op)
{
    (void)t;
    (void)op;
    return not_built("ct_dist_all_reduce");
}

ct_status ct_dist_broadcast(ct_tensor *t, int root)
{
    (void)t;
    (void)root;
    return not_built("ct_dist_broadcast");
}

ct_status ct_dist_all_gather(ct_tensor *output, const ct_tensor *input)
{
    (void)output;
    (void)input;
    return not_built("ct_dist_all_gather");
}

ct_status ct_dist_reduce_scatter(ct_tensor *output, const ct_tensor *input, ct_reduce_op op)
{
    (void)output;
    (void)input;
    (void)op;
    return not_built("ct_dist_reduce_scatter");
}

/* Never reached by SyncBatchNorm here (the group is never initialised); says why if called. */
ct_tensor *ct_dist_all_reduce_with_grad(const ct_tensor *input, ct_reduce_op op)
{
    (void)input;
    (void)op;
    return not_built("ct_dist_all_reduce_with_grad"), NULL;
}

const char *ct_dist_backend_name(ct_device_type type)
{
    (void)type;
    return NULL;
}

ct_dist_work *ct_dist_all_reduce_async(ct_tensor *t, ct_reduce_op op)
{
    (void)t;
    (void)op;
    not_built("ct_dist_all_reduce_async");
    return NULL;
}

bool ct_dist_work_is_completed(const ct_dist_work *work)
{
    (void)work;
    return true;
}

ct_status ct_dist_work_wait(ct_dist_work *work)
{
    (void)work; /* no work is ever started without MPI */
    return CT_OK;
}

ct_module *ct_distributed_data_parallel(ct_module *module, const ct_ddp_options *options)
{
    (void)module;
    (void)options;
    not_built("ct_distributed_data_parallel");
    return NULL;
}

bool ct_is_distributed_data_parallel(const ct_module *m)
{
    if (!m) ct_null_argument("ct_is_distributed_data_parallel", "m");
    return false;
}

ct_status ct_ddp_no_sync_push(ct_module *ddp)
{
    (void)ddp;
    return not_built("ct_ddp_no_sync_push");
}

ct_status ct_ddp_no_sync_pop(ct_module *ddp)
{
    (void)ddp;
    return not_built("ct_ddp_no_sync_pop");
}

ct_status ct_ddp_get_stats(const ct_module *ddp, ct_ddp_stats *out)
{
    (void)ddp;
    (void)out;
    return not_built("ct_ddp_get_stats");
}
