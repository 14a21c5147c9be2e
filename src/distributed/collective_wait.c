/* Waiting for a collective with a time limit, as PyTorch's process groups do (their `timeout`,
 * 10 minutes by default): ctorch starts the agreement that opens every collective (and the other
 * small exchanges of the distributed layer) non-blocking and polls it, so that a rank that never
 * arrives (stopped, busy elsewhere, or in another collective) cannot keep the others waiting for
 * ever. The transfer that follows, once every rank has arrived, is watched by
 * transfer_watchdog.c.
 *
 * When the limit passes, the rank asks every other rank where it is, over a communicator of its
 * own (point-to-point, so that a rank that waits in any ctorch collective can answer while it
 * polls): a rank that answers from the same collective has arrived; one that answers from another
 * collective is named with it; one that answers nothing is stopped, gone, or busy outside ctorch's
 * collectives. A rank that is asked learns that the asker gave up, and fails too, after its own
 * survey: every rank that can ends with a message naming the collective and the missing ranks.
 * MPI cannot cancel a started collective, so the group is broken from then on: later collectives
 * fail at once, and ct_dist_finalize leaves MPI alone (finalising would wait for the missing
 * ranks); the program ends the job (ct_dist_abort, or an exit with an error status). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/dist_internal.h"

#define DEFAULT_TIMEOUT_SECONDS 600.0
/* How long a rank that gave up waits for the others' answers: ranks in a collective answer
 * within microseconds; a second is ample even on loaded machines. */
#define ANSWER_SECONDS 1.0
/* Polls between two looks at the clock and at the questions. */
#define POLLS_PER_LOOK 8
/* The most ranks a message lists one by one. */
#define LISTED_MAX 16

enum { TAG_QUESTION = 1, TAG_ANSWER = 2 };

/* Where a rank is: sent as the question (by a rank that gave up) and as the answer. */
typedef struct whereabouts {
    int64_t number;     /* the collective's number on that rank (ct_dist_group.collective_number) */
    double waited;      /* seconds the asker waited (questions only) */
    char function[48];  /* the collective's public name */
} whereabouts;

/* The program's choice (ct_dist_set_timeout), 0 when it made none. */
static double timeout_from_program;

static ct_status bad_timeout(const char *where, const char *text)
{
    return ct_error(CT_ERR_INVALID_ARGUMENT, "%s is '%s'; give the collectives' time limit in seconds, a "
                    "number above 0 and at most %g (about 31 years; the default is %g)", where, text,
                    CT_DIST_TIMEOUT_MAX_SECONDS, DEFAULT_TIMEOUT_SECONDS);
}

/* Bounded here, where it is read: the deadlines and the watchdog's wait turn it into integer
 * seconds, which a value near 1e19 overflows. */
static bool good_timeout(double seconds)
{
    return isfinite(seconds) && seconds > 0 && seconds <= CT_DIST_TIMEOUT_MAX_SECONDS;
}

ct_status ct_dist_timeout_from_environment(double *seconds)
{
    *seconds = timeout_from_program > 0 ? timeout_from_program : DEFAULT_TIMEOUT_SECONDS;
    const char *text = getenv("CTORCH_DIST_TIMEOUT");
    if (timeout_from_program > 0 || !text) return CT_OK;
    char *end;
    double value = strtod(text, &end);
    if (end == text || *end != '\0' || !good_timeout(value))
        return bad_timeout("CTORCH_DIST_TIMEOUT", text);
    *seconds = value;
    return CT_OK;
}

ct_status ct_dist_set_timeout(double seconds)
{
    if (!good_timeout(seconds)) {
        char text[64];
        snprintf(text, sizeof text, "%g", seconds);
        return bad_timeout("ct_dist_set_timeout: seconds", text);
    }
    timeout_from_program = seconds;
    ct_dist_group *group = &ct_dist_group_state;
    pthread_mutex_lock(&group->lock);
    group->timeout_seconds = seconds;
    pthread_mutex_unlock(&group->lock);
    return CT_OK;
}

double ct_dist_timeout(void)
{
    if (ct_dist_group_state.initialized) return ct_dist_group_state.timeout_seconds;
    double seconds;
    return ct_dist_timeout_from_environment(&seconds) == CT_OK ? seconds : DEFAULT_TIMEOUT_SECONDS;
}

static whereabouts here(const ct_dist_group *group, double waited)
{
    whereabouts w = {.number = group->collective_number, .waited = waited};
    snprintf(w.function, sizeof w.function, "%s", group->collective_function ? group->collective_function : "");
    return w;
}

/* Answers one pending question, if any: true, with the asker's rank and whereabouts. */
static bool take_question(ct_dist_group *group, int *asker, whereabouts *theirs)
{
    int pending = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_QUESTION, group->control, &pending, &status) != MPI_SUCCESS || !pending)
        return false;
    if (MPI_Recv(theirs, (int)sizeof *theirs, MPI_BYTE, status.MPI_SOURCE, TAG_QUESTION, group->control,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return false;
    theirs->function[sizeof theirs->function - 1] = '\0';
    *asker = status.MPI_SOURCE;
    /* The answer goes out whether or not the asker still listens (a small message: it completes
     * on its own). */
    static whereabouts answer; /* one collective at a time: the group's lock */
    answer = here(group, 0);
    MPI_Request request;
    if (MPI_Isend(&answer, (int)sizeof answer, MPI_BYTE, *asker, TAG_ANSWER, group->control, &request) == MPI_SUCCESS)
        MPI_Request_free(&request);
    return true;
}

/* ", " separated ranks into text (the first LISTED_MAX, then how many more). */
static void append_ranks(char *text, size_t size, const int *ranks, int count)
{
    size_t used = strlen(text);
    for (int i = 0; i < count && i < LISTED_MAX && used < size; i++)
        used += (size_t)snprintf(text + used, size - used, "%s%d", i ? ", " : "", ranks[i]);
    if (count > LISTED_MAX && used < size) snprintf(text + used, size - used, " and %d more", count - LISTED_MAX);
}

/* Gives up the process group: the collective's request stays started (MPI cannot take it back). */
static ct_status break_group(ct_dist_group *group, const char *text)
{
    group->broken = true;
    snprintf(group->broken_reason, sizeof group->broken_reason, "%s", text);
    return ct_error(CT_ERR_TIMEOUT, "%s; the process group cannot be used any more: end the job "
                    "(ct_dist_abort, or exit with an error status)", text);
}

static bool same_place(const whereabouts *a, const whereabouts *b)
{
    return a->number == b->number && strcmp(a->function, b->function) == 0;
}

/* Sends the question to every other rank and collects answers for ANSWER_SECONDS at most,
 * answering the others' questions meanwhile; answered[r] says who answered (this rank and the
 * asker, if any, count as answered). */
static void ask_around(ct_dist_group *group, const whereabouts *question, int asker, whereabouts *answers,
                       bool *answered)
{
    int world = group->world_size;
    for (int r = 0; r < world; r++) {
        MPI_Request request;
        if (r != group->rank &&
            MPI_Isend(question, (int)sizeof *question, MPI_BYTE, r, TAG_QUESTION, group->control, &request) ==
                MPI_SUCCESS)
            MPI_Request_free(&request);
    }
    answered[group->rank] = true;
    answers[group->rank] = *question;
    int missing = world - 1;
    /* The asker is known to have given up: where it is now is not this collective's concern. */
    if (asker >= 0 && asker != group->rank && asker < world) {
        answered[asker] = true;
        answers[asker] = *question;
        missing--;
    }
    double until = ct_dist_seconds() + ANSWER_SECONDS;
    while (missing > 0 && ct_dist_seconds() < until) {
        int from;
        whereabouts theirs;
        while (take_question(group, &from, &theirs)) {
            /* A rank that asks is in a collective: that is its answer too. */
            if (!answered[from]) missing--;
            answered[from] = true;
            answers[from] = theirs;
        }
        int pending = 0;
        MPI_Status status;
        if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ANSWER, group->control, &pending, &status) != MPI_SUCCESS || !pending)
            continue;
        from = status.MPI_SOURCE;
        if (MPI_Recv(&theirs, (int)sizeof theirs, MPI_BYTE, from, TAG_ANSWER, group->control, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
            continue;
        theirs.function[sizeof theirs.function - 1] = '\0';
        if (!answered[from]) missing--;
        answered[from] = true;
        answers[from] = theirs;
    }
}

/* Appends to text the ranks that did not answer, then those in another collective. */
static void describe_answers(char *text, size_t size, const whereabouts *question, const whereabouts *answers,
                             const bool *answered, int world, int *listed, bool timed_out_here)
{
    int silent = 0, elsewhere = 0;
    for (int r = 0; r < world; r++) {
        if (!answered[r]) listed[silent++] = r;
        else if (!same_place(&answers[r], question)) elsewhere++;
    }
    size_t used = strlen(text);
    if (silent > 0 && used < size) {
        snprintf(text + used, size - used, "; %s ", silent == 1 ? "rank" : "ranks");
        append_ranks(text, size, listed, silent);
        used = strlen(text);
        if (used < size)
            snprintf(text + used, size - used, " did not arrive (%s no answer: stopped, gone, or busy outside "
                     "ctorch's collectives)", silent == 1 ? "it gives" : "they give");
    }
    for (int r = 0, shown = 0; r < world && shown < LISTED_MAX; r++) {
        used = strlen(text);
        if (!answered[r] || used >= size || same_place(&answers[r], question)) continue;
        snprintf(text + used, size - used, "; rank %d is in %s, its collective #%lld (this is #%lld)", r,
                 answers[r].function, (long long)answers[r].number, (long long)question->number);
        shown++;
    }
    used = strlen(text);
    if (timed_out_here && silent == 0 && elsewhere == 0 && used < size)
        snprintf(text + used, size - used, "; every rank is in it: the transfer itself took longer than the limit");
}

/* Asks every other rank where it is and records the error: what happened (this rank's time is up,
 * or `asker` gave up, as `asked` says), then the ranks that did not arrive. */
static ct_status survey(ct_dist_group *group, int asker, const whereabouts *asked)
{
    const char *fn = group->collective_function ? group->collective_function : "a collective";
    char text[1024];
    if (asker < 0)
        snprintf(text, sizeof text, "%s: timed out after %g s (the limit: CTORCH_DIST_TIMEOUT or "
                 "ct_dist_set_timeout)", fn, group->timeout_seconds);
    else
        snprintf(text, sizeof text, "%s: rank %d gave up waiting in %s (its collective #%lld) after %.1f s", fn,
                 asker, asked->function, (long long)asked->number, asked->waited);
    int world = group->world_size;
    whereabouts *answers = calloc((size_t)world, sizeof *answers);
    bool *answered = calloc((size_t)world, sizeof *answered);
    int *listed = calloc((size_t)world, sizeof *listed);
    if (answers && answered && listed) {
        static whereabouts question; /* sent without waiting; one collective at a time: the group's lock */
        question = here(group, ct_dist_seconds() - group->started);
        ask_around(group, &question, asker, answers, answered);
        describe_answers(text, sizeof text, &question, answers, answered, world, listed, asker < 0);
    } else {
        size_t used = strlen(text);
        snprintf(text + used, sizeof text - used, " (no memory to ask the other ranks where they are)");
    }
    free(answers);
    free(answered);
    free(listed);
    return break_group(group, text);
}

ct_status ct_dist_check_questions(ct_dist_group *group)
{
    int asker;
    whereabouts asked;
    if (!take_question(group, &asker, &asked)) return CT_OK;
    return survey(group, asker, &asked);
}

ct_status ct_dist_wait(ct_dist_group *group, MPI_Request *request, const char *call)
{
    for (unsigned polls = 1;; polls++) {
        int done = 0;
        int code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (code != MPI_SUCCESS)
            return ct_dist_mpi_fail(group->collective_function ? group->collective_function : "ct_dist", call, code);
        if (done) return CT_OK;
        if (polls % POLLS_PER_LOOK != 0) continue;
        /* The request stays started: MPI cannot take it back (the group is broken from now on). */
        if (ct_dist_check_questions(group) != CT_OK) return ct_last_error();
        if (ct_dist_seconds() >= group->started + group->timeout_seconds) return survey(group, -1, NULL);
    }
}
