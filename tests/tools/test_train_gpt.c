/* `ctorch train --model gpt`'s training code and command, with a tiny GPT on part of the shipped
 * Shakespeare: --grad-accum 2 gives, step for step, the losses of the doubled batch; --graph the
 * very losses and parameters of the eager loop (with a constant rate, replayed, on the cpu and
 * opencl:0; with warm-up cosine, captured again each step); --resume from a step's checkpoint continues with the losses
 * of the run that never stopped; the command saves a checkpoint with nanoGPT's names (the
 * training state beside it) that `ctorch generate` samples from, deterministically for a seed,
 * and the same ids from it as llm.c's .bin (ctorch convert); and bad input (a data file, T
 * above the block, heads that do not divide the channels, a prompt longer than the block, token
 * ids at or above the vocabulary) exits 2 with a message before any training. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "support/fresh_path.h"
#include "tool_test.h"
#include "train_gpt.h"

enum { STEPS = 4, MAX_STEPS = 16 };

#define TINY "--model gpt --device cpu --layers 1 --heads 2 --channels 32 --seq-len 16 --batch-size 4 " \
             "--eval-batches 2 --sample 0"

static ct_gpt_train_config tiny_config(void)
{
    ct_gpt_train_config c = ct_gpt_train_config_default();
    c.model.n_layer = 1;
    c.model.n_head = 2;
    c.model.n_embd = 32;
    c.model.block_size = 16;
    c.seq_len = 16;
    c.batch_size = 4;
    c.steps = STEPS;
    c.warmup = 2;
    c.eval_every = 0;
    c.eval_batches = 2;
    c.seed = 5;
    return c;
}

static void load_tokens(ct_gpt_tokens *tokens)
{
    if (ct_gpt_tokens_load(CTORCH_SOURCE_DIR "/data/tinyshakespeare.txt", 0, 0.1, tokens) != CT_OK)
        fail_msg("%s", ct_train_error_message());
}

typedef struct run_record {
    double loss[MAX_STEPS];
    int64_t count;
} run_record;

static void record(void *context, const ct_gpt_step *step)
{
    run_record *r = context;
    assert_true(r->count < MAX_STEPS);
    r->loss[r->count++] = step->loss;
}

/* Trains a fresh model of c's; returns it (the caller releases it). */
static ct_module *train(const ct_gpt_tokens *tokens, const ct_gpt_train_config *c, run_record *r,
                        ct_gpt_train_result *result)
{
    ct_manual_seed(c->seed);
    ct_module *model = ct_gpt(&c->model);
    assert_non_null(model);
    *r = (run_record){0};
    ct_gpt_observer observer = {.on_step = record, .context = r};
    if (ct_gpt_train_run(model, tokens, c, &observer, result) != CT_OK) fail_msg("%s", ct_train_error_message());
    return model;
}

static void grad_accum_2_equals_the_doubled_batch(void **state)
{
    (void)state;
    ct_gpt_tokens tokens;
    load_tokens(&tokens);
    ct_gpt_train_config doubled = tiny_config(), accumulated = tiny_config();
    doubled.batch_size = 8;
    accumulated.batch_size = 4;
    accumulated.grad_accum = 2;
    run_record a, b;
    ct_gpt_train_result ra, rb;
    ct_module_release(train(&tokens, &doubled, &a, &ra));
    ct_module_release(train(&tokens, &accumulated, &b, &rb));
    assert_int_equal(a.count, STEPS);
    assert_int_equal(b.count, STEPS);
    for (int64_t i = 0; i < STEPS; i++)
        if (!(fabs(a.loss[i] - b.loss[i]) <= 1e-5 * a.loss[i]))
            fail_msg("step %lld: loss %.9g at batch 8, %.9g with 2 x 4 accumulated", (long long)i, a.loss[i], b.loss[i]);
    if (!(fabs(ra.val_loss - rb.val_loss) <= 1e-5 * ra.val_loss))
        fail_msg("validation loss %.9g at batch 8, %.9g accumulated", ra.val_loss, rb.val_loss);
    /* learning: the last step's loss below the first's (ln 256 = 5.55 at the start) */
    assert_true(a.loss[STEPS - 1] < a.loss[0]);
    ct_gpt_tokens_free(&tokens);
}

static void assert_same_parameters(ct_module *a, ct_module *b)
{
    ct_named_tensors *pa = ct_module_named_parameters(a), *pb = ct_module_named_parameters(b);
    assert_int_equal(pa->count, pb->count);
    for (int64_t i = 0; i < pa->count; i++) {
        int64_t n = ct_numel(pa->tensors[i]);
        float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        assert_int_equal(ct_tensor_to_array(pa->tensors[i], x, (size_t)n * sizeof *x), CT_OK);
        assert_int_equal(ct_tensor_to_array(pb->tensors[i], y, (size_t)n * sizeof *y), CT_OK);
        if (memcmp(x, y, (size_t)n * sizeof *x) != 0) fail_msg("%s differs with --graph", pa->names[i]);
        free(x);
        free(y);
    }
    ct_named_tensors_free(pa);
    ct_named_tensors_free(pb);
}

static void graph_gives_the_same_bits(ct_device device, bool schedule, int64_t grad_accum)
{
    ct_gpt_tokens tokens;
    load_tokens(&tokens);
    ct_gpt_train_config eager = tiny_config();
    eager.device = device;
    eager.schedule = schedule;
    eager.grad_accum = grad_accum;
    ct_gpt_train_config graph = eager;
    graph.graph = true;
    run_record a, b;
    ct_gpt_train_result ra, rb;
    ct_module *ma = train(&tokens, &eager, &a, &ra), *mb = train(&tokens, &graph, &b, &rb);
    for (int64_t i = 0; i < STEPS; i++)
        if (a.loss[i] != b.loss[i])
            fail_msg("step %lld: loss %.9g eager, %.9g with --graph", (long long)i, a.loss[i], b.loss[i]);
    assert_true(ra.val_loss == rb.val_loss);
    assert_same_parameters(ma, mb);
    ct_module_release(ma);
    ct_module_release(mb);
    ct_gpt_tokens_free(&tokens);
}

static void graph_replays_the_eager_step_bit_for_bit(void **state)
{
    (void)state;
    graph_gives_the_same_bits(CT_DEVICE_CPU, false, 1);
    graph_gives_the_same_bits(CT_DEVICE_CPU, false, 2);
    if (ct_device_count(CT_OPENCL) > 0) graph_gives_the_same_bits((ct_device){CT_OPENCL, 0}, false, 1);
}

static void graph_captures_again_as_the_rate_changes(void **state)
{
    (void)state;
    graph_gives_the_same_bits(CT_DEVICE_CPU, true, 1);
}

/* DataParallel over opencl:0 and opencl:1 (the batch split, the gradients summed on the first):
 * the losses of opencl:0 alone. */
static void data_parallel_equals_one_device(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 2) skip();
    ct_gpt_tokens tokens;
    load_tokens(&tokens);
    ct_gpt_train_config alone = tiny_config();
    alone.device = (ct_device){CT_OPENCL, 0};
    ct_gpt_train_config split = alone;
    split.data_parallel_count = 2;
    split.data_parallel[0] = (ct_device){CT_OPENCL, 0};
    split.data_parallel[1] = (ct_device){CT_OPENCL, 1};
    run_record a, b;
    ct_gpt_train_result ra, rb;
    ct_module_release(train(&tokens, &alone, &a, &ra));
    ct_module_release(train(&tokens, &split, &b, &rb));
    for (int64_t i = 0; i < STEPS; i++)
        if (!(fabs(a.loss[i] - b.loss[i]) <= 1e-5 * a.loss[i]))
            fail_msg("step %lld: loss %.9g on opencl:0, %.9g with DataParallel", (long long)i, a.loss[i], b.loss[i]);
    ct_gpt_tokens_free(&tokens);
}

/* on_state: keeps the checkpoint of step 2 at the path of context. */
static ct_status save_at_step_2(void *context, const ct_module *model, const ct_gpt_train_state *state)
{
    const ct_gpt_train_config *c = ((const void **)context)[0];
    const char *path = ((const void **)context)[1];
    return state->step == 2 ? ct_train_gpt_save(model, c, state, path) : CT_OK;
}

static void resume_continues_the_run(void **state)
{
    (void)state;
    ct_gpt_tokens tokens;
    load_tokens(&tokens);
    ct_gpt_train_config c = tiny_config();
    c.eval_every = 2;
    char path[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_gpt_resume_");
    const void *context[2] = {&c, path};
    ct_manual_seed(c.seed);
    ct_module *model = ct_gpt(&c.model);
    ct_gpt_train_result result;
    ct_gpt_observer saving = {.on_state = save_at_step_2, .context = (void *)context};
    assert_int_equal(ct_gpt_train_run(model, &tokens, &c, &saving, &result), CT_OK);
    double whole_final = result.final_loss, whole_val = result.val_loss;
    ct_module_release(model);

    ct_manual_seed(99); /* the resumed run takes the file's state, not a fresh one */
    ct_gpt_config m = c.model;
    model = ct_gpt(&m);
    ct_gpt_train_state resumed;
    if (ct_train_gpt_resume(path, &c, model, &resumed) != CT_OK) fail_msg("%s", ct_train_error_message());
    assert_int_equal(resumed.step, 2);
    ct_gpt_train_config rest = c;
    rest.resume = &resumed;
    run_record tail = {0};
    ct_gpt_observer recording = {.on_step = record, .context = &tail};
    assert_int_equal(ct_gpt_train_run(model, &tokens, &rest, &recording, &result), CT_OK);
    assert_int_equal(tail.count, STEPS - 2);
    if (result.final_loss != whole_final || result.val_loss != whole_val)
        fail_msg("resumed: final loss %.9g, validation %.9g; the whole run %.9g, %.9g", result.final_loss,
                 result.val_loss, whole_final, whole_val);
    /* a run with other options is refused, naming the option */
    ct_gpt_train_config other = c;
    other.lr = 2e-3;
    ct_gpt_train_state refused;
    assert_int_equal(ct_train_gpt_resume(path, &other, model, &refused), CT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(ct_train_error_message(), "--lr"));
    ct_gpt_train_state_free(&resumed);
    ct_module_release(model);
    ct_gpt_tokens_free(&tokens);
    unlink(path);
    char state_file[300];
    snprintf(state_file, sizeof state_file, "%s.state", path);
    unlink(state_file);
}

static char *run_ok(const char *args)
{
    int status;
    char *out = run_tool(args, &status);
    if (status != 0) fail_msg("ctorch %s: status %d: %s", args, status, out);
    return out;
}

/* Exit 2, the message holding part, and no training step printed. */
static void assert_refused(const char *args, const char *part)
{
    int status;
    char *out = run_tool(args, &status);
    if (status != 2 || !strstr(out, part) || strstr(out, "\"step\"") || strstr(out, "step "))
        fail_msg("ctorch %s: status %d, expected 2 with '%s' before training: %s", args, status, part, out);
    free(out);
}

static void write_token_file(const char *path, int32_t magic, int32_t version, int32_t count, int32_t held,
                             uint16_t id)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int32_t header[256] = {magic, version, count};
    fwrite(header, sizeof header, 1, f);
    for (int32_t i = 0; i < held; i++) {
        uint16_t t = (uint16_t)(i % 7 == 3 ? id : i % 200);
        fwrite(&t, sizeof t, 1, f);
    }
    fclose(f);
}

static void the_command_trains_saves_and_generates(void **state)
{
    (void)state;
    char path[256], args[1024];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_gpt_cli_");
    snprintf(args, sizeof args, "train " TINY " --steps 3 --json --save %s", path);
    char *out = run_ok(args);
    int steps = 0;
    for (const char *at = strstr(out, "{\"step\""); at; at = strstr(at + 1, "{\"step\"")) steps++;
    assert_int_equal(steps, 3);
    cJSON *summary = last_json_line(out);
    double val = number(summary, "val_loss");
    assert_true(val > 0 && val < 6);
    cJSON_Delete(summary);
    free(out);

    /* nanoGPT's names and the config */
    ct_state_dict *sd = ct_load(path, NULL);
    assert_non_null(sd);
    const char *names[] = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.attn.c_attn.weight",
                           "transformer.h.0.mlp.c_proj.bias", "transformer.ln_f.weight", "lm_head.weight"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!ct_state_dict_contains(sd, names[i])) fail_msg("the checkpoint lacks %s", names[i]);
    ct_tensor *c_attn = ct_state_dict_get(sd, "transformer.h.0.attn.c_attn.weight");
    assert_int_equal(ct_tensor_size(c_attn, 0), 96);
    assert_int_equal(ct_tensor_size(c_attn, 1), 32);
    ct_release(c_attn);
    assert_string_equal(ct_state_dict_metadata(sd, "n_head"), "2");
    assert_string_equal(ct_state_dict_metadata(sd, "block_size"), "16");
    ct_state_dict_free(sd);
    /* the training state beside it: AdamW's two groups, as nanoGPT's configure_optimizers (decay
     * on the 2-D weights only) */
    char state_file[300];
    snprintf(state_file, sizeof state_file, "%s.state", path);
    sd = ct_load(state_file, NULL);
    assert_non_null(sd);
    double decay[2];
    for (int g = 0; g < 2; g++) {
        char name[64];
        snprintf(name, sizeof name, "optimizer.param_groups.%d.weight_decay", g);
        ct_tensor *t = ct_state_dict_get(sd, name);
        if (!t || ct_item(t, &decay[g]) != CT_OK) fail_msg("the checkpoint lacks %s", name);
        ct_release(t);
    }
    assert_true(decay[0] == 0.1 && decay[1] == 0.0);
    ct_state_dict_free(sd);

    /* generate: the prompt and 10 new ids, the same for a seed */
    snprintf(args, sizeof args, "generate --device cpu --checkpoint %s --prompt-tokens 70,105 --max-new-tokens 10 "
             "--print-tokens --seed 3", path);
    char *first = run_ok(args), *second = run_ok(args);
    assert_string_equal(first, second);
    assert_true(strncmp(first, "70,105,", 7) == 0);
    /* the same model as llm.c's .bin (ctorch convert) samples the same ids */
    char bin[300];
    snprintf(bin, sizeof bin, "%s.bin", path);
    snprintf(args, sizeof args, "convert %s %s", path, bin);
    free(run_ok(args));
    snprintf(args, sizeof args, "generate --device cpu --checkpoint %s --prompt-tokens 70,105 --max-new-tokens 10 "
             "--print-tokens --seed 3", bin);
    char *from_bin = run_ok(args);
    assert_string_equal(from_bin, first);
    free(from_bin);
    unlink(bin);
    int commas = 0;
    for (const char *p = first; *p; p++) commas += *p == ',';
    assert_int_equal(commas, 11);
    free(first);
    free(second);
    snprintf(args, sizeof args, "generate --device cpu --checkpoint %s --prompt 'To be' --max-new-tokens 5", path);
    out = run_ok(args);
    assert_true(strncmp(out, "To be", 5) == 0);
    free(out);

    /* the errors that need a checkpoint */
    snprintf(args, sizeof args, "generate --device cpu --checkpoint %s --prompt 'a prompt of more than 16 bytes'", path);
    assert_refused(args, "block size");
    snprintf(args, sizeof args, "generate --device cpu --checkpoint %s --prompt-tokens 1,256", path);
    assert_refused(args, "vocabulary is 256");
    snprintf(args, sizeof args, "train --model gpt --device cpu --init %s --seq-len 32 --steps 1", path);
    assert_refused(args, "--seq-len 32");
    snprintf(args, sizeof args, "train " TINY " --steps 3 --resume %s", path);
    assert_refused(args, "has finished its 3 steps");
    unlink(path);
    unlink(state_file);
}

static void bad_input_exits_2_before_training(void **state)
{
    (void)state;
    assert_refused("train " TINY " --heads 3 --steps 1", "n_head");
    assert_refused("train " TINY " --lr-schedule cosine --steps 1", "warmup-cosine");
    assert_refused("train " TINY " --data-order backwards --steps 1", "--data-order");
    assert_refused("train " TINY " --data /nonexistent/tokens.bin --steps 1", "/nonexistent/tokens.bin");
    char path[256], args[512];
    snprintf(path, sizeof path, "/tmp/ctorch_gpt_tokens_%d.bin", (int)getpid());
    snprintf(args, sizeof args, "train " TINY " --steps 1 --data %s", path);
    write_token_file(path, 20240521, 1, 1000, 1000, 5);
    assert_refused(args, "magic");
    write_token_file(path, CT_TOKEN_FILE_MAGIC, 2, 1000, 1000, 5);
    assert_refused(args, "version 2");
    write_token_file(path, CT_TOKEN_FILE_MAGIC, 1, 1000, 900, 5);
    assert_refused(args, "the header says 1000 tokens");
    write_token_file(path, CT_TOKEN_FILE_MAGIC, 1, 20, 20, 5);
    assert_refused(args, "window");
    write_token_file(path, CT_TOKEN_FILE_MAGIC, 1, 1000, 1000, 60000);
    assert_refused(args, "is id 60000, outside the vocabulary of 50257");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grad_accum_2_equals_the_doubled_batch),
        cmocka_unit_test(graph_replays_the_eager_step_bit_for_bit),
        cmocka_unit_test(graph_captures_again_as_the_rate_changes),
        cmocka_unit_test(data_parallel_equals_one_device),
        cmocka_unit_test(resume_continues_the_run),
        cmocka_unit_test(the_command_trains_saves_and_generates),
        cmocka_unit_test(bad_input_exits_2_before_training),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
