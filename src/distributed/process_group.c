/* The process group over MPI: joining and leaving it, rank, world size, and the local rank
 * among the processes of one machine. */
#include <stdio.h>
#include <stdlib.h>

#include "distributed/dist_internal.h"

ct_dist_group ct_dist_group_state = {.lock = PTHREAD_MUTEX_INITIALIZER, .comm = MPI_COMM_NULL,
                                     .control = MPI_COMM_NULL,
                                     .work_lock = PTHREAD_MUTEX_INITIALIZER,
                                     .work_changed = PTHREAD_COND_INITIALIZER};

ct_status ct_dist_mpi_fail(const char *function, const char *call, int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", code);
    return ct_error(CT_ERR_BACKEND, "%s: %s failed: %s", function, call, text);
}

ct_dist_group *ct_dist_group_get(const char *function)
{
    if (!ct_dist_group_state.initialized)
        return ct_error_null(CT_ERR_UNAVAILABLE, "%s: the process group is not initialised; call "
                             "ct_dist_init first (and start the processes with mpirun or srun)", function);
    return &ct_dist_group_state;
}

ct_dist_group *ct_dist_collective_begin(const char *function)
{
    ct_dist_group *group = ct_dist_group_get(function);
    if (!group) return NULL;
    if (group->thread_level < MPI_THREAD_SERIALIZED) {
        int is_main = 0;
        MPI_Is_thread_main(&is_main);
        if (!is_main)
            return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: MPI was initialised with a thread level "
                                 "that lets only the main thread call it; call collectives from the "
                                 "main thread, or initialise MPI with MPI_THREAD_SERIALIZED or more", function);
    }
    ct_dist_works_drain(group);
    pthread_mutex_lock(&group->lock);
    if (group->broken) {
        pthread_mutex_unlock(&group->lock);
        return ct_error_null(CT_ERR_TIMEOUT, "%s: the process group cannot be used any more: %s; end the job "
                             "(ct_dist_abort, or exit with an error status)", function, group->broken_reason);
    }
    group->collective_number++;
    group->collective_function = function;
    group->started = ct_dist_seconds();
    /* Another rank may have given up already: then this collective would never complete. */
    if (ct_dist_check_questions(group) != CT_OK) {
        group->collective_function = NULL;
        pthread_mutex_unlock(&group->lock);
        return NULL;
    }
    return group;
}

void ct_dist_collective_end(ct_dist_group *group)
{
    group->collective_function = NULL;
    pthread_mutex_unlock(&group->lock);
}

/* The rank among the processes that share this machine's memory, and their number. */
static ct_status find_local_rank(ct_dist_group *group)
{
    MPI_Comm local;
    int code = MPI_Comm_split_type(group->comm, MPI_COMM_TYPE_SHARED, group->rank, MPI_INFO_NULL, &local);
    if (code != MPI_SUCCESS) return ct_dist_mpi_fail("ct_dist_init", "MPI_Comm_split_type", code);
    MPI_Comm_rank(local, &group->local_rank);
    MPI_Comm_size(local, &group->local_world_size);
    MPI_Comm_free(&local);
    return CT_OK;
}

ct_status ct_dist_init(void)
{
    static const char *FN = "ct_dist_init";
    ct_dist_group *group = &ct_dist_group_state;
    if (group->initialized) return CT_OK;
    double timeout;
    ct_status status = ct_dist_timeout_from_environment(&timeout);
    if (status != CT_OK) return status;
    int finalized = 0, initialized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return ct_error(CT_ERR_UNAVAILABLE, "%s: MPI has been finalised in this process and cannot "
                        "start again; initialise the process group once per process", FN);
    MPI_Initialized(&initialized);
    int code;
    if (initialized) {
        code = MPI_Query_thread(&group->thread_level);
        if (code != MPI_SUCCESS) return ct_dist_mpi_fail(FN, "MPI_Query_thread", code);
        group->owns_mpi = false;
    } else {
        /* Collectives may come from a communication thread (DDP's overlap with backward). */
        code = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &group->thread_level);
        if (code != MPI_SUCCESS) return ct_dist_mpi_fail(FN, "MPI_Init_thread", code);
        group->owns_mpi = true;
    }
    code = MPI_Comm_dup(MPI_COMM_WORLD, &group->comm);
    if (code != MPI_SUCCESS) return ct_dist_mpi_fail(FN, "MPI_Comm_dup", code);
    code = MPI_Comm_dup(MPI_COMM_WORLD, &group->control);
    if (code != MPI_SUCCESS) {
        MPI_Comm_free(&group->comm);
        return ct_dist_mpi_fail(FN, "MPI_Comm_dup", code);
    }
    /* Errors come back as statuses; a rank that dies still ends the job through the launcher. */
    MPI_Comm_set_errhandler(group->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(group->control, MPI_ERRORS_RETURN);
    MPI_Comm_rank(group->comm, &group->rank);
    MPI_Comm_size(group->comm, &group->world_size);
    status = find_local_rank(group);
    if (status != CT_OK) {
        MPI_Comm_free(&group->comm);
        MPI_Comm_free(&group->control);
        return status;
    }
    group->timeout_seconds = timeout;
    group->collective_number = 0;
    group->broken = false;
    if (group->thread_level < MPI_THREAD_SERIALIZED)
        ct_log_message(CT_LOG_INFO, "ct_dist_init: MPI's thread level is %d: ctorch's collectives must be "
                       "called from the main thread", group->thread_level);
    ct_dist_watchdog_start(group);
    group->initialized = true;
    return CT_OK;
}

ct_status ct_dist_finalize(void)
{
    static const char *FN = "ct_dist_finalize";
    ct_dist_group *group = &ct_dist_group_state;
    if (!group->initialized) return CT_OK;
    ct_dist_comm_thread_stop(group);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        /* Every rank must have come to the end: one still in another collective (it had more of
         * them to call) gets an error naming ct_dist_finalize instead of waiting for ever, and so
         * does this one. MPI stays as it is then: finalising would wait for that rank. */
        ct_dist_group *g = ct_dist_collective_begin(FN);
        if (!g) return ct_last_error();
        ct_dist_descriptor d = ct_dist_describe(CT_DIST_FINALIZE, -1, -1, NULL);
        ct_status status = ct_dist_agree(g, &d);
        ct_dist_collective_end(g);
        if (status != CT_OK) return status;
    }
    ct_dist_watchdog_stop();
    pthread_mutex_lock(&group->lock);
    ct_dist_staging_free(group);
    ct_dist_nccl_finalize();
    int code = MPI_SUCCESS;
    if (!finalized) {
        /* The program may have finalised MPI itself already; then the communicators are gone. */
        MPI_Comm_free(&group->comm);
        MPI_Comm_free(&group->control);
        if (group->owns_mpi) code = MPI_Finalize();
    }
    group->comm = group->control = MPI_COMM_NULL;
    group->initialized = false;
    pthread_mutex_unlock(&group->lock);
    return code == MPI_SUCCESS ? CT_OK : ct_dist_mpi_fail(FN, "MPI_Finalize", code);
}

bool ct_dist_is_initialized(void) { return ct_dist_group_state.initialized; }

void ct_dist_abort(int exit_code)
{
    fflush(stdout);
    fflush(stderr);
    if (ct_dist_group_state.initialized) MPI_Abort(ct_dist_group_state.comm, exit_code);
    exit(exit_code);
}

int ct_dist_rank(void)
{
    ct_dist_group *group = ct_dist_group_get("ct_dist_rank");
    return group ? group->rank : -1;
}

int ct_dist_world_size(void)
{
    ct_dist_group *group = ct_dist_group_get("ct_dist_world_size");
    return group ? group->world_size : -1;
}

int ct_dist_local_rank(void)
{
    ct_dist_group *group = ct_dist_group_get("ct_dist_local_rank");
    return group ? group->local_rank : -1;
}

int ct_dist_local_world_size(void)
{
    ct_dist_group *group = ct_dist_group_get("ct_dist_local_world_size");
    return group ? group->local_world_size : -1;
}
