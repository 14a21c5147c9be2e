/* The ctorch command: one file per subcommand. */
#ifndef CT_TOOL_H
#define CT_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctorch.h"

int ct_cmd_info(int argc, char **argv);
int ct_cmd_bench(int argc, char **argv);
int ct_cmd_train(int argc, char **argv);
int ct_cmd_eval(int argc, char **argv);
int ct_cmd_train_gpt(int argc, char **argv); /* ctorch train --model gpt */
int ct_cmd_generate(int argc, char **argv);
int ct_cmd_convert(int argc, char **argv);

#include "json_write.h" /* --json's lines */
#include "option_suggest.h" /* "did you mean --lr-schedule?" */

/* ---- options (tools/tool_args.c) ----
 * Exit statuses: 2 for a bad command line (and inputs that are missing), 1 for a failure while
 * working. The parsers print "ctorch <command>: <what is wrong>; <what is valid>" to stderr and
 * return false. */
enum { CT_EXIT_FAILURE = 1, CT_EXIT_USAGE = 2 };

/* Matches argv[*i] against option (`--epochs 5` or `--epochs=5`): true and *value set when it is
 * that option, advancing *i past a separate value. A missing value prints an error and sets
 * *value to NULL. */
bool ct_arg_option(const char *command, int argc, char **argv, int *i, const char *option, const char **value);
/* Integers in [min, max]; numbers in (min, max]. */
bool ct_arg_int(const char *command, const char *option, const char *text, long long min, long long max,
                long long *out);
bool ct_arg_uint64(const char *command, const char *option, const char *text, uint64_t *out);
bool ct_arg_double(const char *command, const char *option, const char *text, double min, double max,
                   double *out);
/* `--scale`: a number above 0, or a fraction written A/B ("1/16", "1/255"). */
bool ct_arg_scale(const char *command, const char *text, double *out);
/* A file that exists and can be read. */
bool ct_arg_readable_file(const char *command, const char *option, const char *path);

/* ---- devices (tools/tool_device.c) ---- */
/* The device named by text (`--device`). When text is NULL: the best one here (ct_best_device,
 * which reads CTORCH_DEVICE), or for one rank of a job of several (job, may be NULL) ct_dist_device's
 * (from the local rank, or CTORCH_DIST_DEVICE). false after printing the error, with the rank in
 * a job. */
struct ct_tool_job;
bool ct_tool_choose_device(const char *command, const struct ct_tool_job *job, const char *text, ct_device *out);
/* "Using CPU" or "Using opencl:0 (pthread-AMD EPYC ...)", as the seeds print "Using GPU". */
void ct_tool_print_using(FILE *out, ct_device device);
/* The devices of `--data-parallel text`: a list of devices of one type, each once
 * ("opencl:0,opencl:1"), or a type alone ("opencl": every visible device of it, in index order).
 * device_text (`--device`, may be NULL) must then name the list's first device, where the model
 * and the batches go. Writes out[0..*count) (at most max); false after printing the error. */
bool ct_tool_choose_data_parallel(const char *command, const char *text, const char *device_text, ct_device *out,
                                  int max, int *count);
/* "Using DataParallel over opencl:0, opencl:1 (pthread-AMD EPYC ...)". */
void ct_tool_print_using_data_parallel(FILE *out, const ct_device *devices, int count);

/* ---- one rank of an MPI job (tools/tool_job.c) ----
 * `mpirun -np N ctorch train` starts N processes of the same command line: each joins the process
 * group, rank 0 alone prints, and a rank that fails while working ends the whole job. */
typedef struct ct_tool_job {
    bool distributed;     /* launched with more than one process, and in the process group */
    int rank, world_size; /* 0 and 1 for a process alone */
    /* Between quiet_begin and agree: what this rank held back from stderr. */
    int saved_stderr;
    FILE *capture;
    char *held;
} ct_tool_job;

/* Joins the process group when the launcher started more than one process
 * (ct_dist_launcher_world_size); otherwise *job is this process alone. false after printing. */
bool ct_tool_job_start(const char *command, ct_tool_job *job);
/* Every rank reads the same command line, so rank 0 alone reports what is wrong with it: on the
 * other ranks, stderr is held back between begin and end, and ct_tool_job_agree prints it only
 * when it differs from rank 0's (ranks started with different command lines). */
void ct_tool_job_quiet_begin(ct_tool_job *job);
void ct_tool_job_quiet_end(ct_tool_job *job);
/* The largest of every rank's status (a collective), so that all ranks go on, or end, together; a
 * rank that failed for its own reason prints what it held back, as "rank R of N". */
int ct_tool_job_agree(ct_tool_job *job, int status);
/* Reports a failure while working. Alone: "ctorch <command>: message", and returns status. In a
 * job of several: "ctorch <command>: rank R of N: message", then ends every rank at once with
 * status (ct_dist_abort: the others may be waiting for this one in a collective). */
int ct_tool_job_fail(const char *command, const ct_tool_job *job, int status, const char *message);
/* "Using DistributedDataParallel over 2 processes, on opencl:0, opencl:1 (rank 0 prints)": a
 * collective (it gathers the ranks' devices); rank 0 prints. false when the gathering failed. */
bool ct_tool_job_print_using(FILE *out, const ct_tool_job *job, ct_device device);
/* Leaves the process group (every rank, together) when distributed; returns status. */
int ct_tool_job_end(const ct_tool_job *job, int status);

#endif
