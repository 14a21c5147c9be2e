/* `ctorch train` as one rank of an MPI job (`mpirun -np N ctorch train`, `srun ctorch train`):
 * joining the process group, choosing the rank's device, agreeing on the command line, saying
 * which devices the job uses, and ending: together when all is well, at once when one rank fails
 * while working (the others may be waiting for it in a collective). Started without a launcher, or
 * by one with a single process, the job is this process alone and nothing here touches MPI. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "tool.h"

bool ct_tool_job_start(const char *command, ct_tool_job *job)
{
    *job = (ct_tool_job){.distributed = false, .rank = 0, .world_size = 1};
    int launched = ct_dist_launcher_world_size();
    if (launched <= 1) return true;
    if (ct_dist_init() != CT_OK) {
        /* No rank to name: every process of the job says it. */
        fprintf(stderr, "ctorch %s: the launcher started %d processes, but joining them failed: %s\n", command,
                launched, ct_last_error_message());
        return false;
    }
    *job = (ct_tool_job){.distributed = true, .rank = ct_dist_rank(), .world_size = ct_dist_world_size()};
    return true;
}

int ct_tool_job_quiet_begin(const ct_tool_job *job)
{
    if (job->rank == 0) return -1;
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0) dup2(null, STDERR_FILENO);
    if (null >= 0) close(null);
    return saved;
}

void ct_tool_job_quiet_end(int saved)
{
    if (saved < 0) return;
    dup2(saved, STDERR_FILENO);
    close(saved);
}

int ct_tool_job_agree(const ct_tool_job *job, int status)
{
    if (!job->distributed) return status;
    int64_t worst = status;
    ct_tensor *t = ct_tensor_from_data(&worst, CT_I64, (int64_t[]){1}, 1, CT_DEVICE_CPU);
    bool agreed = t && ct_dist_all_reduce(t, CT_REDUCE_MAX) == CT_OK && ct_item_int64(t, &worst) == CT_OK;
    ct_release(t);
    if (!agreed) {
        fprintf(stderr, "ctorch: rank %d of %d: agreeing on the options: %s\n", job->rank, job->world_size,
                ct_last_error_message());
        ct_dist_abort(CT_EXIT_FAILURE);
    }
    return (int)worst;
}

int ct_tool_job_fail(const char *command, const ct_tool_job *job, int status, const char *message)
{
    if (!job->distributed) {
        fprintf(stderr, "ctorch %s: %s\n", command, message);
        return status;
    }
    fprintf(stderr, "ctorch %s: rank %d of %d: %s\n", command, job->rank, job->world_size, message);
    ct_dist_abort(status); /* does not return */
    return status;
}

bool ct_tool_job_print_using(FILE *out, const ct_tool_job *job, ct_device device)
{
    /* Every rank's device as (type, index), gathered in rank order. */
    int64_t mine[2] = {device.type, device.index}, *all = calloc((size_t)job->world_size * 2, sizeof *all);
    ct_tensor *input = ct_tensor_from_data(mine, CT_I64, (int64_t[]){2}, 1, CT_DEVICE_CPU);
    ct_tensor *output = ct_empty((int64_t[]){(int64_t)job->world_size * 2}, 1, CT_I64, CT_DEVICE_CPU);
    bool gathered = all && input && output && ct_dist_all_gather(output, input) == CT_OK &&
                    ct_tensor_to_array(output, all, (size_t)job->world_size * 2 * sizeof *all) == CT_OK;
    ct_release(input);
    ct_release(output);
    if (gathered && job->rank == 0) {
        fprintf(out, "Using DistributedDataParallel over %d processes, on", job->world_size);
        for (int r = 0; r < job->world_size; r++) {
            char name[CT_DEVICE_STRING_MAX];
            ct_device d = {(ct_device_type)all[2 * r], (int)all[2 * r + 1]};
            fprintf(out, "%s %s", r == 0 ? "" : ",", ct_device_format(d, name, sizeof name));
        }
        fprintf(out, " (rank 0 prints)\n");
    }
    free(all);
    return gathered;
}

int ct_tool_job_end(const ct_tool_job *job, int status)
{
    if (job->distributed && ct_dist_finalize() != CT_OK && status == 0) {
        fprintf(stderr, "ctorch: rank %d of %d: leaving the process group: %s\n", job->rank, job->world_size,
                ct_last_error_message());
        return CT_EXIT_FAILURE;
    }
    return status;
}
