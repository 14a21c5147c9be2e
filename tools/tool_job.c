/* `ctorch train` as one rank of an MPI job (`mpirun -np N ctorch train`, `srun ctorch train`):
 * joining the process group, choosing the rank's device, agreeing on the command line, saying
 * which devices the job uses, and ending: together when all is well, at once when one rank fails
 * while working (the others may be waiting for it in a collective). Started without a launcher, or
 * by one with a single process, the job is this process alone and nothing here touches MPI. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
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

void ct_tool_job_quiet_begin(ct_tool_job *job)
{
    job->saved_stderr = -1;
    job->held = NULL;
    if (job->rank == 0) return;
    fflush(stderr);
    job->capture = tmpfile();
    int saved = dup(STDERR_FILENO);
    int into = job->capture ? fileno(job->capture) : open("/dev/null", O_WRONLY);
    if (saved >= 0 && into >= 0 && dup2(into, STDERR_FILENO) >= 0) job->saved_stderr = saved;
    else if (saved >= 0) close(saved);
    if (!job->capture && into >= 0) close(into);
}

void ct_tool_job_quiet_end(ct_tool_job *job)
{
    if (job->saved_stderr < 0) return;
    fflush(stderr);
    dup2(job->saved_stderr, STDERR_FILENO);
    close(job->saved_stderr);
    job->saved_stderr = -1;
    if (!job->capture) return;
    long size = ftell(job->capture);
    if (size > 0 && fseek(job->capture, 0, SEEK_SET) == 0 && (job->held = malloc((size_t)size + 1))) {
        size_t got = fread(job->held, 1, (size_t)size, job->capture);
        job->held[got] = '\0';
    }
    fclose(job->capture);
    job->capture = NULL;
}

/* FNV-1a of text, in 62 bits (its negation is an int64). */
static int64_t text_digest(const char *text)
{
    uint64_t h = 14695981039346656037ULL;
    for (; text && *text; text++) h = (h ^ (unsigned char)*text) * 1099511628211ULL;
    return (int64_t)(h >> 2);
}

/* The held lines, each as "ctorch <command>: rank R of N: ..." (rank 0 printed its own). */
static void print_held(const ct_tool_job *job)
{
    for (const char *line = job->held; line && *line;) {
        const char *end = strchr(line, '\n');
        int length = end ? (int)(end - line) : (int)strlen(line);
        const char *colon = strstr(line, ": ");
        if (strncmp(line, "ctorch", 6) == 0 && colon && colon < line + length) {
            int head = (int)(colon + 2 - line);
            fprintf(stderr, "%.*srank %d of %d: %.*s\n", head, line, job->rank, job->world_size, length - head,
                    line + head);
        } else {
            fprintf(stderr, "ctorch: rank %d of %d: %.*s\n", job->rank, job->world_size, length, line);
        }
        line += length + (end ? 1 : 0);
    }
    fflush(stderr);
}

int ct_tool_job_agree(ct_tool_job *job, int status)
{
    if (!job->distributed) return status;
    /* Every rank's status and the digest of what it held back, in rank order. */
    int64_t mine[2] = {status, text_digest(job->held)}, *all = calloc((size_t)job->world_size * 2, sizeof *all);
    ct_tensor *input = ct_tensor_from_data(mine, CT_I64, (int64_t[]){2}, 1, CT_DEVICE_CPU);
    ct_tensor *output = ct_empty((int64_t[]){(int64_t)job->world_size * 2}, 1, CT_I64, CT_DEVICE_CPU);
    bool agreed = all && input && output && ct_dist_all_gather(output, input) == CT_OK &&
                  ct_tensor_to_array(output, all, (size_t)job->world_size * 2 * sizeof *all) == CT_OK;
    ct_release(input);
    ct_release(output);
    if (!agreed) {
        fprintf(stderr, "ctorch: rank %d of %d: agreeing on the options: %s\n", job->rank, job->world_size,
                ct_last_error_message());
        free(all);
        ct_dist_abort(CT_EXIT_FAILURE);
    }
    /* A rank whose command line was rejected for a reason rank 0 did not print (the ranks were
     * started with different command lines) prints its own. */
    if (status != 0 && job->rank != 0 && (all[0] == 0 || all[1] != mine[1])) print_held(job);
    int worst = 0;
    for (int r = 0; r < job->world_size; r++)
        if (all[2 * r] > worst) worst = (int)all[2 * r];
    free(all);
    free(job->held);
    job->held = NULL;
    return worst;
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
    if (job->distributed && ct_dist_finalize() != CT_OK) {
        /* Another rank is not at the end (or a collective timed out): MPI was left as it is, and
         * the job must end rather than wait for that rank. */
        fprintf(stderr, "ctorch: rank %d of %d: leaving the process group: %s\n", job->rank, job->world_size,
                ct_last_error_message());
        ct_dist_abort(status != 0 ? status : CT_EXIT_FAILURE);
    }
    return status;
}
