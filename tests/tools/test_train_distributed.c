/* `mpirun -np 2 ctorch train` (DistributedDataParallel) as a user runs it, on the cpu and on the
 * two OpenCL devices: it learns, rank 0 alone prints (one summary, with world_size 2) and saves a
 * checkpoint of plain names that `ctorch eval` tests to the same accuracy; its per-epoch losses
 * are those of one process with twice the batch, on the cpu and (where there are 2) on CUDA devices
 * through NCCL; -np 1 is plain `ctorch train`; a bad command line
 * exits 2 with one line of ours; a rank that fails ends the whole job, non-zero, in bounded time.
 * The program starts the jobs itself (CTORCH_MPIRUN, from tests/mpi_tests.cmake). */
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "support/fresh_path.h"
#include "tool_test.h"

enum { MAX_EPOCHS = 8 };

/* Runs a shell command line, stderr joined to stdout; returns the output (malloc'ed), the exit
 * status and the seconds it took. */
static char *run(const char *command, int *exit_status, double *seconds)
{
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char *out = ct_test_run_command(command, exit_status);
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (seconds) *seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
    return out;
}

/* `ctorch args` as a job of `ranks` processes, with environment assignments env ("" for none)
 * before mpirun, cut off after a minute (a hang must fail the test, not stall it). */
static char *run_job(int ranks, const char *env, const char *args, int *status, double *seconds)
{
    char command[4096];
    snprintf(command, sizeof command, "%s timeout --kill-after=10 60 %s %d %s '%s' %s 2>&1", env, CTORCH_MPIRUN,
             ranks, CTORCH_MPIRUN_FLAGS, CTORCH_TOOL_PATH, args);
    return run(command, status, seconds);
}

static char *run_alone(const char *args, int *status)
{
    char command[4096];
    snprintf(command, sizeof command, "'%s' %s 2>&1", CTORCH_TOOL_PATH, args);
    return run(command, status, NULL);
}

static size_t count_occurrences(const char *text, const char *part)
{
    size_t count = 0;
    for (const char *at = strstr(text, part); at; at = strstr(at + 1, part)) count++;
    return count;
}

static void assert_contains(const char *out, const char *part)
{
    if (!strstr(out, part)) fail_msg("the output lacks '%s': %s", part, out);
}

/* The JSON lines of a --json run: the epochs' losses and the summary (the caller deletes it). */
typedef struct json_run {
    double loss[MAX_EPOCHS], accuracy[MAX_EPOCHS];
    int epochs, summaries;
    cJSON *summary;
} json_run;

static json_run parse_json_lines(const char *out)
{
    json_run run = {0};
    for (const char *line = out; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        const char *end = strchr(line, '\n');
        cJSON *json = cJSON_ParseWithLength(line, end ? (size_t)(end - line) : strlen(line));
        if (!json) continue; /* mpirun's own lines, if any */
        if (cJSON_GetObjectItem(json, "epoch")) {
            assert_true(run.epochs < MAX_EPOCHS);
            run.loss[run.epochs] = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "loss"));
            run.accuracy[run.epochs] = cJSON_GetNumberValue(cJSON_GetObjectItem(json, "accuracy"));
            run.epochs++;
            cJSON_Delete(json);
        } else if (cJSON_GetObjectItem(json, "test_accuracy")) {
            run.summaries++;
            cJSON_Delete(run.summary);
            run.summary = json;
        } else {
            cJSON_Delete(json);
        }
    }
    if (!run.summary) fail_msg("no JSON summary: %s", out);
    return run;
}

static void two_ranks_on_the_cpu_learn_print_once_and_save_plain_names(void **state)
{
    (void)state;
    char path[256], args[512];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_ddp_test_");
    snprintf(args, sizeof args, "train --epochs 2 --json --save %s", path);
    int status;
    char *out = run_job(2, "CTORCH_DIST_DEVICE=cpu", args, &status, NULL);
    if (status != 0) fail_msg("status %d: %s", status, out);
    json_run run = parse_json_lines(out);
    if (run.epochs != 2 || run.summaries != 1) fail_msg("rank 0 alone prints: %s", out);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(run.summary, "device")), "cpu");
    assert_int_equal((int)number(run.summary, "world_size"), 2);
    double accuracy = number(run.summary, "test_accuracy");
    if (!(accuracy > 0.6 && accuracy <= 1)) fail_msg("test_accuracy %g (chance is 0.1): %s", accuracy, out);
    assert_true(number(run.summary, "samples_per_second") > 0);
    cJSON_Delete(run.summary);
    free(out);

    /* Plain names, and eval finds the same accuracy. */
    ct_state_dict *sd = ct_load(path, NULL);
    assert_non_null(sd);
    assert_int_equal(checkpoint_model_entries(sd), 4); /* two linear layers */
    ct_state_dict_free(sd);
    snprintf(args, sizeof args, "eval --device cpu --json --checkpoint %s", path);
    out = run_alone(args, &status);
    if (status != 0) fail_msg("eval: status %d: %s", status, out);
    run = parse_json_lines(out);
    if (number(run.summary, "test_accuracy") != accuracy)
        fail_msg("train said %g, eval %g", accuracy, number(run.summary, "test_accuracy"));
    cJSON_Delete(run.summary);
    free(out);
    unlink(path);
}

static void two_ranks_take_an_opencl_device_each(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 2) skip();
    int status;
    char *out = run_job(2, "CTORCH_DIST_DEVICE=opencl", "train --epochs 2", &status, NULL);
    if (status != 0) fail_msg("status %d: %s", status, out);
    assert_contains(out, "Using DistributedDataParallel over 2 processes, on opencl:0, opencl:1");
    assert_contains(out, "batch 32 per process (64 in all)");
    if (count_occurrences(out, "epoch 2/2  loss ") != 1 || count_occurrences(out, "Test accuracy: ") != 1)
        fail_msg("rank 0 alone prints: %s", out);
    double percent = atof(strstr(out, "Test accuracy: ") + strlen("Test accuracy: "));
    if (!(percent > 60)) fail_msg("test accuracy %g%%: %s", percent, out);
    free(out);
}

/* Writes the first `rows` samples of the digits to a CSV file at path. */
static void write_digits_part(const char *path, int64_t rows)
{
    ct_scope_push();
    ct_dataset *digits = ct_csv_dataset_load(CTORCH_DIGITS_PATH, NULL);
    assert_non_null(digits);
    int64_t features = ct_dataset_num_features(digits);
    ct_tensor *x = ct_dataset_features(digits), *y = ct_dataset_labels(digits);
    float *values = malloc((size_t)(rows * features) * sizeof *values);
    int64_t *labels = malloc((size_t)rows * sizeof *labels);
    assert_int_equal(ct_tensor_to_array(ct_narrow(x, 0, 0, rows), values, (size_t)(rows * features) * sizeof *values),
                     CT_OK);
    assert_int_equal(ct_tensor_to_array(ct_narrow(y, 0, 0, rows), labels, (size_t)rows * sizeof *labels), CT_OK);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < features; j++) fprintf(f, "%g,", values[i * features + j]);
        fprintf(f, "%lld\n", (long long)labels[i]);
    }
    fclose(f);
    free(values);
    free(labels);
    ct_dataset_free(digits);
    ct_scope_pop();
}

/* The epochs' losses of 2 ranks at batch 16 against those of one process at batch 32, on data
 * (NULL: the digits); fails beyond the relative tolerance. The ranks run with the environment
 * job_env, the process alone with --device alone_device. Returns the job's output. */
static char *compare_with_one_process(const char *data, double tolerance, const char *job_env,
                                      const char *alone_device)
{
    char args[512];
    snprintf(args, sizeof args, "--epochs 2 --json%s%s --batch-size", data ? " --data " : "", data ? data : "");
    char job_args[600], alone_args[700];
    snprintf(job_args, sizeof job_args, "train %s 16", args);
    snprintf(alone_args, sizeof alone_args, "train --device %s %s 32", alone_device, args);
    int status;
    char *job_out = run_job(2, job_env, job_args, &status, NULL);
    if (status != 0) fail_msg("status %d: %s", status, job_out);
    char *alone_out = run_alone(alone_args, &status);
    if (status != 0) fail_msg("status %d: %s", status, alone_out);
    json_run job = parse_json_lines(job_out), alone = parse_json_lines(alone_out);
    assert_int_equal(job.epochs, 2);
    assert_int_equal(alone.epochs, 2);
    for (int e = 0; e < 2; e++) {
        double difference = fabs(job.loss[e] - alone.loss[e]) / alone.loss[e];
        if (!(difference <= tolerance))
            fail_msg("%s: epoch %d: loss %.7g on 2 ranks at batch 16, %.7g alone at batch 32 (%.2g relative, "
                     "tolerance %.2g)", data ? data : "digits", e + 1, job.loss[e], alone.loss[e], difference,
                     tolerance);
    }
    cJSON_Delete(job.summary);
    cJSON_Delete(alone.summary);
    free(alone_out);
    return job_out;
}

/* Writes the first 600 digits to a fresh CSV file: 480 to train (an even count), 120 to test. */
static void write_even_digits(char *path)
{
    int fd = mkstemps(path, 4);
    assert_true(fd >= 0);
    close(fd);
    write_digits_part(path, 600);
}

/* With the sampler, rank r walks permutation[r::2] of the permutation one process walks, so step
 * k's batches of 16 on the two ranks are together step k's batch of 32 alone, and the averaged
 * gradient is that batch's mean gradient: the runs are the same up to rounding (float32 sums in
 * another order). That holds when the training set has an even size: then the losses agree to the
 * 6 significant digits --json prints (2e-5 allows for the printing). The digits' 1437 training
 * samples are padded to 1438 with the epoch's first sample, so each epoch's last step has one
 * sample more than alone (30 of 1438 against 29 of 1437): the first epoch's mean loss moves by
 * about (that sample's loss - the epoch's mean) / 1438 (2.5e-4 relative here, the sample's loss
 * being below the epoch's mean, which starts high), and the second epoch starts from weights one
 * slightly different step apart (5e-5 here): 1e-3 covers both with room. */
static void two_ranks_at_half_the_batch_train_as_one_process(void **state)
{
    (void)state;
    char path[] = "/tmp/ctorch_ddp_data_XXXXXX.csv";
    write_even_digits(path);
    free(compare_with_one_process(path, 2e-5, "CTORCH_DIST_DEVICE=cpu", "cpu"));
    unlink(path);
    free(compare_with_one_process(NULL, 1e-3, "CTORCH_DIST_DEVICE=cpu", "cpu"));
}

/* Each rank on its own CUDA device, the gradients averaged by NCCL on the devices: the same
 * losses as one process on cuda:0 with the whole batch. Runs where there are 2 CUDA devices (the
 * stand-in driver and NCCL in tests/cuda/, as a ctest of its own). */
static void two_ranks_on_cuda_devices_train_as_one_process_through_nccl(void **state)
{
    (void)state;
    if (ct_device_count(CT_CUDA) < 2) skip();
    char path[] = "/tmp/ctorch_ddp_data_XXXXXX.csv";
    write_even_digits(path);
    char *out = compare_with_one_process(path, 2e-5, "CTORCH_DIST_DEVICE=cuda CTORCH_LOG=info", "cuda:0");
    unlink(path);
    assert_contains(out, "cuda:0: ");
    assert_contains(out, "cuda:1: ");
    assert_contains(out, "CUDA tensors' collectives go through NCCL");
    if (strstr(out, "go through MPI")) fail_msg("the collectives fell back to MPI: %s", out);
    free(out);
}

static void one_rank_is_plain_ctorch_train(void **state)
{
    (void)state;
    int status;
    char *job_out = run_job(1, "", "train --device cpu --epochs 2 --json", &status, NULL);
    if (status != 0) fail_msg("status %d: %s", status, job_out);
    char *alone_out = run_alone("train --device cpu --epochs 2 --json", &status);
    if (status != 0) fail_msg("status %d: %s", status, alone_out);
    json_run job = parse_json_lines(job_out), alone = parse_json_lines(alone_out);
    assert_int_equal(job.epochs, 2);
    for (int e = 0; e < 2; e++) {
        assert_true(job.loss[e] == alone.loss[e]);
        assert_true(job.accuracy[e] == alone.accuracy[e]);
    }
    assert_int_equal((int)number(job.summary, "world_size"), 1);
    assert_int_equal((int)number(alone.summary, "world_size"), 1);
    cJSON_Delete(job.summary);
    cJSON_Delete(alone.summary);
    free(job_out);
    free(alone_out);
}

/* A job fails with status and our line (part) appears once in its output (mpirun adds its own
 * lines about the failure). Each such job takes about 2 s: mpirun waits that long after a process
 * exits non-zero. */
static void assert_job_fails(const char *env, const char *args, int status, const char *part)
{
    int got;
    char *out = run_job(2, env, args, &got, NULL);
    if (got != status) fail_msg("%s: status %d, want %d: %s", args, got, status, out);
    if (count_occurrences(out, part) != 1) fail_msg("%s: '%s' not once in: %s", args, part, out);
    free(out);
}

static void a_bad_command_line_ends_every_rank_with_one_line(void **state)
{
    (void)state;
    assert_job_fails("CTORCH_DIST_DEVICE=cpu", "train --data-parallel cpu --epochs 1", 2,
                     "ctorch train: --data-parallel drives several devices from one process, but the launcher "
                     "started 2 processes");
    /* Rank 0 writes the checkpoint, so rank 0 checks the path as ct_save would. */
    assert_job_fails("CTORCH_DIST_DEVICE=cpu", "train --epochs 1 --save /nonexistent/m.safetensors", 2,
                     "--save: ct_save: '/nonexistent/m.safetensors': the folder '/nonexistent' does not exist");
    /* --graph replays a step captured on one device, without collectives: refused while parsing. */
    assert_job_fails("CTORCH_DIST_DEVICE=cpu", "train --graph --epochs 1", 2,
                     "ctorch train: --graph cannot go with a launcher's several processes");
    /* Each rank's share (719 samples) has no full batch: refused before training, rank 0 saying so. */
    assert_job_fails("CTORCH_DIST_DEVICE=cpu", "train --epochs 1 --batch-size 1000 --drop-last", 2,
                     "an epoch would have no batch: the training set has 1437 samples, 719 per process of 2");
    /* One rank's device is not there: that rank says so, and the job ends. */
    assert_job_fails("CTORCH_DIST_DEVICE=cpu,opencl:99", "train --epochs 1", 2, "rank 1 of 2: choosing the device");
}

static void a_rank_that_fails_while_working_ends_the_job(void **state)
{
    (void)state;
    /* Rank 1 alone cannot find the data (rank 0 has it and waits for rank 1 in DDP's first
     * collective): rank 1 reports it and the whole job ends, non-zero, well within the minute
     * run_job allows. */
    char command[4096];
    snprintf(command, sizeof command,
             "CTORCH_DIST_DEVICE=cpu timeout --kill-after=10 60 %s 2 %s sh -c 'if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" "
             "= 1 ]; then export CTORCH_DATA=/nonexistent; fi; exec \"$0\" \"$@\"' '%s' train --epochs 1 2>&1",
             CTORCH_MPIRUN, CTORCH_MPIRUN_FLAGS, CTORCH_TOOL_PATH);
    int status;
    double seconds;
    char *out = run(command, &status, &seconds);
    if (status == 0 || status == 124 || status == 137) fail_msg("status %d after %.1f s: %s", status, seconds, out);
    if (seconds > 30) fail_msg("the job took %.1f s to end: %s", seconds, out);
    assert_contains(out, "ctorch train: rank 1 of 2: the digits data set:");
    assert_contains(out, "CTORCH_DATA");
    free(out);
}

/* `ctorch args` as a job of 2 processes in which rank 1 gets rank1_args after args (a later
 * option wins): ranks started with different command lines. */
static char *run_job_rank1_differs(const char *args, const char *rank1_args, int *status, double *seconds)
{
    char command[4096];
    snprintf(command, sizeof command,
             "CTORCH_DIST_DEVICE=cpu timeout --kill-after=10 60 %s 2 %s sh -c 'if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" "
             "= 1 ]; then set -- \"$@\" %s; fi; exec \"$0\" \"$@\"' '%s' %s 2>&1",
             CTORCH_MPIRUN, CTORCH_MPIRUN_FLAGS, rank1_args, CTORCH_TOOL_PATH, args);
    return run(command, status, seconds);
}

/* Ranks started with different settings end at the start, every rank with status 2, with one line
 * that names the setting and each rank's value (rank 0's with --epochs 2 or the digits). */
static void assert_ranks_disagree(const char *rank1_args, const char *part)
{
    int status;
    double seconds;
    char *out = run_job_rank1_differs("train --epochs 2", rank1_args, &status, &seconds);
    if (status != 2) fail_msg("rank 1 with %s: status %d after %.1f s, want 2: %s", rank1_args, status, seconds, out);
    if (seconds > 30) fail_msg("rank 1 with %s: the job took %.1f s to end: %s", rank1_args, seconds, out);
    if (count_occurrences(out, part) != 1) fail_msg("rank 1 with %s: '%s' not once in: %s", rank1_args, part, out);
    if (strstr(out, "epoch 1/")) fail_msg("rank 1 with %s: the job trained: %s", rank1_args, out);
    free(out);
}

/* Once a rank waited for ever in an all-reduce that a rank with fewer epochs never called; ranks
 * with another seed trained on overlapping shares of other splits; ranks with more or less data
 * failed with "reduces with sum, rank 0 with avg". */
static void ranks_started_with_different_settings_fail_at_once_naming_them(void **state)
{
    (void)state;
    assert_ranks_disagree("--epochs 1", "ctorch train: ct_dist_agree_on_settings: --epochs differs between the "
                          "ranks: rank 0 has '2', rank 1 has '1'");
    assert_ranks_disagree("--seed 7", "--seed differs between the ranks: rank 0 has '0', rank 1 has '7'");
    assert_ranks_disagree("--batch-size 16", "--batch-size differs between the ranks: rank 0 has '32', rank 1 has '16'");
    char path[] = "/tmp/ctorch_ddp_data_XXXXXX.csv", args[128];
    write_even_digits(path);
    snprintf(args, sizeof args, "--data %s", path);
    assert_ranks_disagree(args, "the number of training samples (--data) differs between the ranks: rank 0 has "
                          "'1437', rank 1 has '480'");
    unlink(path);
    /* Options that change the numbers, not the number of collectives: the replicas would diverge,
     * and exit 0. --drop-last was found only mid-epoch, without naming it. */
    assert_ranks_disagree("--lr-schedule step:1", "--lr-schedule differs between the ranks: rank 0 has 'none', "
                          "rank 1 has 'step:1:0.1'");
    assert_ranks_disagree("--clip-grad 1", "--clip-grad differs between the ranks: rank 0 has '0', rank 1 has '1'");
    assert_ranks_disagree("--drop-last", "--drop-last differs between the ranks: rank 0 has 'no', rank 1 has 'yes'");
    assert_ranks_disagree("--val-fraction 0.1", "--val-fraction differs between the ranks");
}

/* A stale --resume file on one rank (another epoch of the same run): every rank ends before the
 * first step, naming the resumed state, where rank 0 once trained, printed and saved. */
static void ranks_resuming_from_different_files_fail_at_once(void **state)
{
    (void)state;
    char first[256], second[256], args[1024], rank1[512];
    ct_test_fresh_checkpoint_path(first, sizeof first, "ctorch_ddp_resume_");
    ct_test_fresh_checkpoint_path(second, sizeof second, "ctorch_ddp_resume_");
    int status;
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --save %s", first);
    free(run_alone(args, &status));
    assert_int_equal(status, 0);
    snprintf(args, sizeof args, "train --device cpu --epochs 2 --save %s", second);
    free(run_alone(args, &status));
    assert_int_equal(status, 0);
    snprintf(args, sizeof args, "train --epochs 3 --resume %s", first);
    snprintf(rank1, sizeof rank1, "--resume %s", second);
    double seconds;
    char *out = run_job_rank1_differs(args, rank1, &status, &seconds);
    if (status != 2) fail_msg("status %d after %.1f s, want 2: %s", status, seconds, out);
    if (count_occurrences(out, "the resumed state (--resume) differs between the ranks: rank 0 has 'epoch 1,") != 1)
        fail_msg("the resumed state is not named once: %s", out);
    assert_contains(out, "rank 1 has 'epoch 2,");
    if (strstr(out, "epoch 2/")) fail_msg("the job trained: %s", out);
    free(out);
    unlink(first);
    unlink(second);
}

/* Rank 1 alone was given a bad option: its own message reaches the user (rank 0 has none). */
static void a_bad_option_on_another_rank_than_0_is_reported_by_that_rank(void **state)
{
    (void)state;
    int status;
    char *out = run_job_rank1_differs("train --epochs 1", "--bogus", &status, NULL);
    if (status != 2) fail_msg("status %d, want 2: %s", status, out);
    if (count_occurrences(out, "ctorch train: rank 1 of 2: unknown option '--bogus'; the options are") != 1)
        fail_msg("rank 1's message is not there once: %s", out);
    free(out);
    out = run_job_rank1_differs("train --epochs 1", "--epochs 0", &status, NULL);
    if (status != 2) fail_msg("status %d, want 2: %s", status, out);
    assert_contains(out, "ctorch train: rank 1 of 2: --epochs");
    free(out);
}

/* Rank 1 is stopped (kill -STOP) while training: with a limit of 2 s, rank 0's collective fails
 * naming rank 1 (or its watchdog ends a transfer rank 1 was stopped in), and the job ends instead
 * of waiting for ever. */
static void a_stopped_rank_ends_the_job_after_the_time_limit(void **state)
{
    (void)state;
    char command[4096];
    snprintf(command, sizeof command,
             "CTORCH_DIST_DEVICE=cpu CTORCH_DIST_TIMEOUT=2 timeout --kill-after=10 60 %s 2 %s sh -c 'if [ "
             "\"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" = 1 ]; then (sleep 3; kill -STOP $$) & fi; exec \"$0\" \"$@\"' "
             "'%s' train --epochs 100000 2>&1",
             CTORCH_MPIRUN, CTORCH_MPIRUN_FLAGS, CTORCH_TOOL_PATH);
    int status;
    double seconds;
    char *out = run(command, &status, &seconds);
    if (status == 0 || status == 124 || status == 137) fail_msg("status %d after %.1f s: %s", status, seconds, out);
    if (seconds > 30) fail_msg("the job took %.1f s to end: %s", seconds, out);
    /* Stopped between collectives, rank 1 is missing from rank 0's next one, which names it; stopped
     * in the middle of a transfer (all ranks had come), the watchdog says so and ends the job. */
    bool named = strstr(out, "ctorch train: rank 0 of 2: ") && strstr(out, "ct_dist_all_reduce: timed out after 2 s");
    if (!named && !strstr(out, "ct_dist_all_reduce: the transfer did not complete within 2 s"))
        fail_msg("no rank said the collective timed out: %s", out);
    if (strstr(out, "timed out after 2 s")) assert_contains(out, "rank 1 did not arrive");
    free(out);
}

/* A collective's time limit that is not a number of seconds: every rank says so and ends. */
static void a_bad_collective_timeout_is_named(void **state)
{
    (void)state;
    int status;
    char *out = run_job(2, "CTORCH_DIST_DEVICE=cpu CTORCH_DIST_TIMEOUT=soon", "train --epochs 1", &status, NULL);
    if (status == 0 || status == 124 || status == 137) fail_msg("status %d: %s", status, out);
    assert_contains(out, "CTORCH_DIST_TIMEOUT is 'soon'; give the collectives' time limit in seconds");
    free(out);
}

/* argv[1], when given, runs only the tests whose names match it (a cmocka filter, * a wildcard). */
int main(int argc, char **argv)
{
    if (argc > 1) cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_ranks_on_the_cpu_learn_print_once_and_save_plain_names),
        cmocka_unit_test(two_ranks_take_an_opencl_device_each),
        cmocka_unit_test(two_ranks_at_half_the_batch_train_as_one_process),
        cmocka_unit_test(two_ranks_on_cuda_devices_train_as_one_process_through_nccl),
        cmocka_unit_test(one_rank_is_plain_ctorch_train),
        cmocka_unit_test(a_bad_command_line_ends_every_rank_with_one_line),
        cmocka_unit_test(a_rank_that_fails_while_working_ends_the_job),
        cmocka_unit_test(ranks_started_with_different_settings_fail_at_once_naming_them),
        cmocka_unit_test(ranks_resuming_from_different_files_fail_at_once),
        cmocka_unit_test(a_bad_option_on_another_rank_than_0_is_reported_by_that_rank),
        cmocka_unit_test(a_stopped_rank_ends_the_job_after_the_time_limit),
        cmocka_unit_test(a_bad_collective_timeout_is_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
