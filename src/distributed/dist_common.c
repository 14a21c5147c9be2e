/* What the distributed layer answers with or without MPI: op names, whether MPI is built in, the
 * world size a launcher announced, and DDP's default options. */
#include <stdlib.h>

#include "core/core_internal.h"
#include "ctorch/distributed.h"

const char *ct_reduce_op_name(ct_reduce_op op)
{
    switch (op) {
    case CT_REDUCE_SUM: return "sum";
    case CT_REDUCE_AVG: return "avg";
    case CT_REDUCE_MAX: return "max";
    case CT_REDUCE_MIN: return "min";
    }
    return "invalid";
}

bool ct_dist_is_available(void)
{
#ifdef CTORCH_HAVE_MPI
    return true;
#else
    return false;
#endif
}

/* The launchers' variables: OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE; MPICH's Hydra and
 * Slurm's srun with PMI-1 or PMI-2 set PMI_SIZE; srun sets SLURM_STEP_NUM_TASKS in every task of a
 * step whatever the plugin (PMIx announces no size), and not in a batch script's own shell, where
 * SLURM_NTASKS is the allocation's and says nothing of how many processes run. */
int ct_dist_launcher_world_size(void)
{
    static const char *variables[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"};
    for (size_t i = 0; i < CT_ARRAY_LEN(variables); i++) {
        const char *text = getenv(variables[i]);
        if (!text || !*text) continue;
        char *end;
        long size = strtol(text, &end, 10);
        if (*end == '\0' && size >= 1 && size <= 1L << 30) return (int)size;
    }
    return 1;
}

ct_ddp_options ct_ddp_options_default(void)
{
    return (ct_ddp_options){.bucket_cap_mb = 25.0, .find_unused_parameters = false, .broadcast_buffers = true,
                            .all_reduce_start = CT_DDP_START_AUTO};
}
