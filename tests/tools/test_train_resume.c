/* Resuming `ctorch train`: 2 epochs straight and 1 epoch, saved, then resumed for 1 more reach
 * the same numbers, bit for bit (every step's loss, the final loss and test accuracy, every
 * parameter and the optimizer's state), with Adam and SGD, a schedule, clipping and validation;
 * a resume file from another run (model, optimizer, learning rate, schedule, epochs) or with no
 * training state is refused by name. And the options around it: --val-fraction, --lr-schedule,
 * --clip-grad with bad values exit 2 with a message; the epoch lines name their accuracies; the
 * progress bar shows the loss and an ETA on a terminal, and plain lines under a launcher; a saved
 * run opens in Python's safetensors. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "support/fresh_path.h"
#include "tool_test.h"
#include "train.h"

/* Do x and y hold equal values (the same shape, every element equal)? */
static bool same_values(const ct_tensor *x, const ct_tensor *y)
{
    if (ct_numel(x) != ct_numel(y)) return false;
    ct_tensor *a = ct_to(x, CT_DEVICE_CPU), *b = ct_to(y, CT_DEVICE_CPU);
    ct_tensor *equal = ct_sum(ct_eq(a, b), NULL, 0, false);
    int64_t count = -1;
    assert_int_equal(ct_item_int64(equal, &count), CT_OK);
    ct_release(a);
    ct_release(b);
    ct_release(equal);
    return count == ct_numel(x);
}

/* ---- in the library: ct_train_run, then again from its state ---- */

/* A model of config trained from state (NULL: fresh) up to config->epochs; the model (on the cpu)
 * and the result (its state for the caller to free). */
static ct_module *run(const ct_train_data *data, ct_train_config config, const ct_module *start,
                      const ct_train_state *state, step_losses *losses, ct_train_result *result)
{
    ct_manual_seed(config.seed);
    ct_module *model = ct_train_model_create(config.model, data->features, data->classes);
    assert_non_null(model);
    if (start) {
        ct_state_dict *sd = ct_module_state_dict(start, NULL);
        assert_int_equal(ct_module_load_state_dict(model, sd, true, NULL), CT_OK);
        ct_state_dict_free(sd);
    }
    config.resume = state;
    ct_train_observer observer = {.on_step = record_loss, .context = losses};
    if (ct_train_run(model, data, &config, &observer, result) != CT_OK) fail_msg("%s", ct_train_error_message());
    assert_int_equal(ct_module_to(model, CT_DEVICE_CPU), CT_OK);
    return model;
}

static void assert_same_parameters(const ct_module *a, const ct_module *b)
{
    ct_state_dict *sa = ct_module_state_dict(a, NULL), *sb = ct_module_state_dict(b, NULL);
    assert_int_equal(ct_state_dict_count(sa), ct_state_dict_count(sb));
    for (int64_t i = 0; i < ct_state_dict_count(sa); i++) {
        ct_tensor *ta = ct_state_dict_tensor_at(sa, i), *tb = ct_state_dict_tensor_at(sb, i);
        int64_t n = ct_numel(ta);
        assert_int_equal(n, ct_numel(tb));
        float *va = malloc((size_t)n * sizeof *va), *vb = malloc((size_t)n * sizeof *vb);
        assert_int_equal(ct_tensor_to_array(ta, va, (size_t)n * sizeof *va), CT_OK);
        assert_int_equal(ct_tensor_to_array(tb, vb, (size_t)n * sizeof *vb), CT_OK);
        if (memcmp(va, vb, (size_t)n * sizeof *va)) fail_msg("'%s' differs", ct_state_dict_name_at(sa, i));
        free(va);
        free(vb);
        ct_release(ta);
        ct_release(tb);
    }
    ct_state_dict_free(sa);
    ct_state_dict_free(sb);
}

static void check_resume(ct_train_optimizer optimizer, const char *schedule, ct_device device)
{
    ct_train_data data;
    if (ct_train_data_load(CTORCH_DIGITS_PATH, 0, &data) != CT_OK) fail_msg("%s", ct_train_error_message());
    assert_int_equal(ct_train_data_hold_out(&data, 0.1, 0), CT_OK);
    ct_train_config config = ct_train_config_default(CT_TRAIN_MLP);
    config.optimizer = optimizer;
    config.lr = ct_train_default_lr(CT_TRAIN_MLP, optimizer);
    config.device = device;
    config.clip_grad = 1.0;
    config.val_fraction = 0.1;
    config.epochs = 2;
    assert_true(ct_train_schedule_parse(schedule, &config.schedule));

    step_losses straight = {0}, first = {0}, second = {0};
    ct_train_result whole, part1, part2;
    ct_module *a = run(&data, config, NULL, NULL, &straight, &whole);
    config.epochs = 1;
    ct_module *b1 = run(&data, config, NULL, NULL, &first, &part1);
    assert_int_equal(part1.state.epoch, 1);
    config.epochs = 2;
    ct_module *b2 = run(&data, config, b1, &part1.state, &second, &part2);
    assert_int_equal(part2.state.epoch, 2);

    assert_int_equal(first.count + second.count, straight.count);
    for (int i = 0; i < straight.count; i++) {
        double resumed = i < first.count ? first.values[i] : second.values[i - first.count];
        if (resumed != straight.values[i])
            fail_msg("%s, %s: step %d's loss %.17g resumed, %.17g straight", ct_train_optimizer_name(optimizer),
                     schedule, i, resumed, straight.values[i]);
    }
    assert_true(part2.final_loss == whole.final_loss);
    assert_true(part2.test_accuracy == whole.test_accuracy);
    assert_int_equal(part2.state.schedule_steps, whole.state.schedule_steps);
    assert_same_parameters(a, b2);
    /* The optimizer's moments and step counts too. */
    assert_int_equal(ct_state_dict_count(part2.state.optimizer), ct_state_dict_count(whole.state.optimizer));
    for (int64_t i = 0; i < ct_state_dict_count(whole.state.optimizer); i++) {
        const char *name = ct_state_dict_name_at(whole.state.optimizer, i);
        ct_tensor *x = ct_state_dict_get(whole.state.optimizer, name), *y = ct_state_dict_get(part2.state.optimizer, name);
        assert_non_null(y);
        if (!same_values(x, y)) fail_msg("the optimizer's '%s' differs", name);
        ct_release(x);
        ct_release(y);
    }
    ct_train_state_free(&whole.state);
    ct_train_state_free(&part1.state);
    ct_train_state_free(&part2.state);
    ct_module_release(a);
    ct_module_release(b1);
    ct_module_release(b2);
    ct_train_data_free(&data);
}

static void resuming_gives_the_numbers_of_a_run_never_stopped(void **state)
{
    (void)state;
    ct_scope_push();
    check_resume(CT_TRAIN_ADAM, "step:1:0.5", CT_DEVICE_CPU);
    check_resume(CT_TRAIN_SGD, "step:1:0.3", CT_DEVICE_CPU);
    check_resume(CT_TRAIN_ADAMW, "warmup:3", CT_DEVICE_CPU);
    if (ct_device_count(CT_OPENCL) > 0) check_resume(CT_TRAIN_ADAM, "none", (ct_device){CT_OPENCL, 0});
    ct_scope_pop();
}

/* A run stopped after its first epoch: the checkpoint `--save` writes then (on_state) resumes to
 * the numbers of the run that went on, with every schedule, those laid out over the whole run
 * (cosine, onecycle) too. */
typedef struct watch {
    step_losses losses; /* first: record_loss's context */
    const ct_train_data *data;
    const ct_train_config *config;
    const char *path;
} watch;

static ct_status save_after_epoch_1(void *context, const ct_module *model, const ct_train_state *state)
{
    const watch *w = context;
    if (state->epoch != 1) return CT_OK;
    return ct_train_checkpoint_save_run(model, w->data, w->config, state, w->path);
}

static void check_stopped_run(const char *schedule, ct_train_optimizer optimizer)
{
    ct_train_data data;
    if (ct_train_data_load(CTORCH_DIGITS_PATH, 2, &data) != CT_OK) fail_msg("%s", ct_train_error_message());
    ct_train_config config = ct_train_config_default(CT_TRAIN_MLP);
    config.seed = 2;
    config.epochs = 3;
    config.optimizer = optimizer;
    config.lr = ct_train_default_lr(CT_TRAIN_MLP, optimizer);
    config.clip_grad = 0.5;
    assert_true(ct_train_schedule_parse(schedule, &config.schedule));
    char path[256];
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_resume_test_");
    watch whole = {.data = &data, .config = &config, .path = path};

    ct_manual_seed(config.seed);
    ct_module *a = ct_train_model_create(config.model, data.features, data.classes);
    ct_train_observer observer = {.on_step = record_loss, .on_state = save_after_epoch_1, .context = &whole};
    ct_train_result ra, rb;
    if (ct_train_run(a, &data, &config, &observer, &ra) != CT_OK) fail_msg("%s", ct_train_error_message());

    ct_manual_seed(12345); /* the resumed run's generators come from the file */
    ct_module *b = ct_train_model_create(config.model, data.features, data.classes);
    ct_train_state saved;
    if (ct_train_checkpoint_resume(path, &data, &config, b, &saved) != CT_OK) fail_msg("%s", ct_train_error_message());
    assert_int_equal(saved.epoch, 1);
    ct_train_config resumed = config;
    resumed.resume = &saved;
    step_losses rest = {0};
    observer = (ct_train_observer){.on_step = record_loss, .context = &rest};
    if (ct_train_run(b, &data, &resumed, &observer, &rb) != CT_OK) fail_msg("%s", ct_train_error_message());

    int first = whole.losses.count - rest.count;
    assert_int_equal(first * 3, whole.losses.count); /* epochs 2 and 3 resumed */
    for (int i = 0; i < rest.count; i++)
        if (rest.values[i] != whole.losses.values[first + i])
            fail_msg("%s: step %d's loss %.17g resumed, %.17g straight", schedule, first + i, rest.values[i],
                     whole.losses.values[first + i]);
    assert_true(rb.final_loss == ra.final_loss && rb.test_accuracy == ra.test_accuracy);
    assert_int_equal(rb.state.schedule_steps, ra.state.schedule_steps);
    assert_same_parameters(a, b);
    ct_train_state_free(&saved);
    ct_train_state_free(&ra.state);
    ct_train_state_free(&rb.state);
    ct_module_release(a);
    ct_module_release(b);
    ct_train_data_free(&data);
    unlink(path);
}

static void a_run_stopped_after_an_epoch_resumes_from_its_checkpoint(void **state)
{
    (void)state;
    ct_scope_push();
    check_stopped_run("cosine:0.0001", CT_TRAIN_ADAM);
    check_stopped_run("onecycle:0.01", CT_TRAIN_ADAMW);
    check_stopped_run("warmup:2", CT_TRAIN_SGD);
    ct_scope_pop();
}

/* ---- through the command: --save, --resume ---- */

/* Runs args, which must succeed; returns the output. */
static char *succeeds(const char *args)
{
    int status;
    char *out = run_tool(args, &status);
    if (status != 0) fail_msg("ctorch %s: status %d: %s", args, status, out);
    return out;
}

static void fails(const char *args, int status, const char *part)
{
    int got;
    char *out = run_tool(args, &got);
    if (got != status) fail_msg("ctorch %s: status %d, want %d: %s", args, got, status, out);
    if (!strstr(out, part)) fail_msg("ctorch %s: the output lacks '%s': %s", args, part, out);
    free(out);
}

/* The line of out that starts with prefix, as JSON (the caller deletes it). */
static cJSON *json_line(const char *out, const char *prefix)
{
    const char *line = strstr(out, prefix);
    if (!line) fail_msg("no line starting '%s' in: %s", prefix, out);
    const char *end = strchr(line, '\n');
    cJSON *json = cJSON_ParseWithLength(line, end ? (size_t)(end - line) : strlen(line));
    assert_non_null(json);
    return json;
}

/* Every tensor of two checkpoints holds the same bytes. */
static void assert_same_checkpoints(const char *a, const char *b)
{
    ct_state_dict *sa = ct_load(a, "cpu"), *sb = ct_load(b, "cpu");
    assert_non_null(sa);
    assert_non_null(sb);
    assert_int_equal(ct_state_dict_count(sa), ct_state_dict_count(sb));
    for (int64_t i = 0; i < ct_state_dict_count(sa); i++) {
        const char *name = ct_state_dict_name_at(sa, i);
        ct_tensor *x = ct_state_dict_get(sa, name), *y = ct_state_dict_get(sb, name);
        if (!y) fail_msg("%s lacks '%s'", b, name);
        if (!same_values(x, y)) fail_msg("'%s' differs between %s and %s", name, a, b);
        ct_release(x);
        ct_release(y);
    }
    ct_state_dict_free(sa);
    ct_state_dict_free(sb);
}

static void the_command_resumes_to_the_same_checkpoint(void **state)
{
    (void)state;
    ct_scope_push();
    char straight[256], first[256], resumed[256], args[1024];
    ct_test_fresh_checkpoint_path(straight, sizeof straight, "ctorch_resume_test_");
    ct_test_fresh_checkpoint_path(first, sizeof first, "ctorch_resume_test_");
    ct_test_fresh_checkpoint_path(resumed, sizeof resumed, "ctorch_resume_test_");
    const char *options = "--device cpu --optimizer sgd --lr-schedule step:1:0.5 --clip-grad 2 --val-fraction 0.1 "
                          "--seed 4 --json";
    snprintf(args, sizeof args, "train %s --epochs 2 --save %s", options, straight);
    char *whole = succeeds(args);
    snprintf(args, sizeof args, "train %s --epochs 1 --save %s", options, first);
    free(succeeds(args));
    snprintf(args, sizeof args, "train %s --epochs 2 --resume %s --save %s", options, first, resumed);
    char *rest = succeeds(args);
    /* The resumed run prints epoch 2 alone, with the numbers of the straight run's epoch 2. */
    assert_null(strstr(rest, "{\"epoch\":1,"));
    cJSON *e1 = json_line(whole, "{\"epoch\":2,"), *e2 = json_line(rest, "{\"epoch\":2,");
    const char *keys[] = {"loss", "accuracy", "val_accuracy", "lr"};
    for (int i = 0; i < 4; i++)
        if (cJSON_GetNumberValue(cJSON_GetObjectItem(e1, keys[i])) !=
            cJSON_GetNumberValue(cJSON_GetObjectItem(e2, keys[i])))
            fail_msg("epoch 2's %s: straight %s, resumed %s", keys[i], whole, rest);
    assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(e2, "lr")) == 0.05 * 0.5);
    cJSON_Delete(e1);
    cJSON_Delete(e2);
    /* The model, the optimizer's momentum, the step counts and the generators: every byte. */
    assert_same_checkpoints(straight, resumed);
    ct_state_dict *sd = ct_load(resumed, "cpu");
    assert_true(ct_state_dict_contains(sd, "optimizer.state.0.momentum_buffer"));
    assert_true(ct_state_dict_contains(sd, "ctorch.rng_state"));
    assert_string_equal(ct_state_dict_metadata(sd, "ctorch.train.epoch"), "2");
    assert_string_equal(ct_state_dict_metadata(sd, "ctorch.train.lr_schedule"), "step:1:0.5");
    ct_state_dict_free(sd);
    free(whole);
    free(rest);

    /* `ctorch eval` takes the resumable checkpoint as a model's. */
    snprintf(args, sizeof args, "eval --device cpu --checkpoint %s", resumed);
    char *eval = succeeds(args);
    assert_non_null(strstr(eval, "Test accuracy of the mlp"));
    free(eval);

    /* Another run's options are refused by name, with status 2. */
    snprintf(args, sizeof args, "train %s --epochs 3 --resume %s --lr 0.01", options, first);
    fails(args, 2, "was saved by a run with --lr 0.05, and this run has --lr 0.01");
    snprintf(args, sizeof args, "train %s --epochs 3 --resume %s --optimizer adam", options, first);
    fails(args, 2, "was saved by a run with --optimizer sgd, and this run has --optimizer adam");
    snprintf(args, sizeof args, "train %s --epochs 3 --resume %s --model cnn", options, first);
    fails(args, 2, "was saved by a run with --model mlp, and this run has --model cnn");
    snprintf(args, sizeof args, "train %s --epochs 3 --resume %s --lr-schedule cosine", options, first);
    fails(args, 2, "--lr-schedule step:1:0.5, and this run has --lr-schedule cosine:0");
    snprintf(args, sizeof args, "train %s --epochs 3 --resume %s --val-fraction 0.2", options, first);
    fails(args, 2, "--val-fraction 0.1, and this run has --val-fraction 0.2");
    snprintf(args, sizeof args, "train %s --epochs 2 --resume %s", options, resumed);
    fails(args, 2, "has finished 2 epochs already: --epochs is the run's total, so give more than 2");
    fails("train --resume /nonexistent/model.safetensors", 2, "--resume '/nonexistent/model.safetensors'");

    /* A model's checkpoint without training state evaluates, but does not resume. */
    ct_train_data data;
    assert_int_equal(ct_train_data_load(CTORCH_DIGITS_PATH, 4, &data), CT_OK);
    ct_module *model = ct_train_model_create(CT_TRAIN_MLP, data.features, data.classes);
    assert_int_equal(ct_train_checkpoint_save(model, CT_TRAIN_MLP, data.features, data.classes, 4, first), CT_OK);
    snprintf(args, sizeof args, "train --device cpu --seed 4 --resume %s", first);
    fails(args, 1, "holds no training state");
    ct_module_release(model);
    ct_train_data_free(&data);

    /* cosine is laid out over the run's epochs: another total is refused. */
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --lr-schedule cosine --save %s", first);
    free(succeeds(args));
    snprintf(args, sizeof args, "train --device cpu --epochs 2 --lr-schedule cosine --resume %s", first);
    fails(args, 2, "its --lr-schedule cosine is laid out over 1 epochs, and this run has --epochs 2");
    unlink(straight);
    unlink(first);
    unlink(resumed);
    ct_scope_pop();
}

/* ---- the options around it ---- */

static void bad_values_exit_2_with_a_message(void **state)
{
    (void)state;
    fails("train --val-fraction 1", 2, "--val-fraction '1' is not a fraction from 0 (no validation) to below 1");
    fails("train --val-fraction -0.1", 2, "--val-fraction '-0.1' is not a fraction");
    fails("train --val-fraction half", 2, "--val-fraction 'half' is not a fraction");
    fails("train --device cpu --val-fraction 0.9999", 2,
          "--val-fraction 0.9999 of the 1437 training samples leaves training without a sample");
    fails("train --lr-schedule linear", 2, "--lr-schedule 'linear' is not a schedule; give step:STEP[:GAMMA], "
                                           "cosine[:ETA_MIN], onecycle[:MAX_LR] or warmup:N[:START]");
    fails("train --lr-schedule step", 2, "'step' needs STEP, the epochs between decays");
    fails("train --lr-schedule step:0", 2, "'step:0' needs STEP");
    fails("train --lr-schedule step:2:0", 2, "'step:2:0' needs GAMMA, the factor of each decay, above 0");
    fails("train --lr-schedule step:2:0.5:1", 2, "'step:2:0.5:1' has too many fields");
    fails("train --lr-schedule cosine:-1", 2, "'cosine:-1' needs ETA_MIN");
    fails("train --lr-schedule onecycle:0", 2, "'onecycle:0' needs MAX_LR");
    fails("train --lr-schedule warmup:0", 2, "'warmup:0' needs N, the warm-up's epochs");
    fails("train --lr-schedule warmup:2:1.5", 2, "'warmup:2:1.5' needs START");
    fails("train --lr-schedule", 2, "--lr-schedule needs a value");
    fails("train --clip-grad 0", 2, "--clip-grad '0' is not a number above 0");
    fails("train --clip-grad -1", 2, "--clip-grad '-1' is not a number above 0");
    fails("train --clip-grad inf", 2, "--clip-grad 'inf' is not a number above 0");
}

static void epoch_lines_name_their_accuracies(void **state)
{
    (void)state;
    char *out = succeeds("train --device cpu --epochs 1 --val-fraction 0.2 --lr-schedule cosine:0.0001");
    const char *parts[] = {"epoch 1/1  loss ", "  train accuracy ", "  val accuracy ", "  lr 0.001  "};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!strstr(out, parts[i])) fail_msg("the output lacks '%s': %s", parts[i], out);
    /* 1437 less ceil(0.2 * 1437) held out. */
    assert_non_null(strstr(out, "on 1149 samples (288 held out for validation), testing on 360"));
    assert_non_null(strstr(out, "adam lr 0.001, schedule cosine:0.0001, seed 0"));
    free(out);
    out = succeeds("train --device cpu --epochs 1");
    assert_non_null(strstr(out, "  train accuracy "));
    assert_null(strstr(out, "val accuracy"));
    assert_null(strstr(out, "  lr ")); /* the rate is said where it changes */
    free(out);
    out = succeeds("train --device cpu --epochs 1 --val-fraction 0.2 --json");
    cJSON *epoch = json_line(out, "{\"epoch\":1,");
    double val = cJSON_GetNumberValue(cJSON_GetObjectItem(epoch, "val_accuracy"));
    assert_true(val > 0.5 && val <= 1.0);
    cJSON_Delete(epoch);
    free(out);
}

/* The first epoch's loss of a run, from its JSON lines. */
static double first_epoch_loss(const char *args)
{
    char *out = succeeds(args);
    cJSON *epoch = json_line(out, "{\"epoch\":1,");
    double loss = cJSON_GetNumberValue(cJSON_GetObjectItem(epoch, "loss"));
    cJSON_Delete(epoch);
    free(out);
    return loss;
}

/* --clip-grad bounds every step: SGD with gradients clipped to a norm of 1e-6 stays near the
 * untrained model's loss (about log 10 = 2.303), where it learns without; a generous bound
 * changes nothing. */
static void clipping_bounds_the_steps(void **state)
{
    (void)state;
    const char *run = "train --device cpu --optimizer sgd --epochs 1 --json";
    char args[256];
    double free_loss = first_epoch_loss(run);
    snprintf(args, sizeof args, "%s --clip-grad 1e-6", run);
    double clipped = first_epoch_loss(args);
    snprintf(args, sizeof args, "%s --clip-grad 1e6", run);
    double generous = first_epoch_loss(args);
    if (!(free_loss < 1.5 && clipped > 2.2 && generous == free_loss))
        fail_msg("first epoch's loss: %g unclipped, %g clipped to 1e-6, %g clipped to 1e6", free_loss, clipped,
                 generous);
}

/* On a terminal (script(1) gives the command one) the bar redraws in place with the loss and an
 * ETA; under a launcher's rank variables the same terminal gets plain lines. */
static void the_bar_shows_the_loss_and_an_eta_on_a_terminal_only(void **state)
{
    (void)state;
    if (system("script -qec true /dev/null > /dev/null 2>&1") != 0) skip();
    char command[2048];
    snprintf(command, sizeof command, "script -qec \"'%s' train --device cpu --epochs 2\" /dev/null", CTORCH_TOOL_PATH);
    int status;
    char *out = ct_test_run_command(command, &status);
    assert_int_equal(status, 0);
    const char *parts[] = {"\r\033[Kepoch 1/2 [", "  loss ", ", ETA ", "epoch 2/2  loss "};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        if (!strstr(out, parts[i])) fail_msg("the terminal's output lacks '%s': %s", parts[i], out);
    free(out);
    const char *launchers[] = {"OMPI_COMM_WORLD_SIZE=1", "PMI_SIZE=1"};
    for (int i = 0; i < 2; i++) {
        snprintf(command, sizeof command, "%s script -qec \"'%s' train --device cpu --epochs 2\" /dev/null",
                 launchers[i], CTORCH_TOOL_PATH);
        out = ct_test_run_command(command, &status);
        assert_int_equal(status, 0);
        if (strstr(out, "ETA") || strstr(out, "\033[K")) fail_msg("%s: a bar under a launcher: %s", launchers[i], out);
        assert_non_null(strstr(out, "epoch 2/2  loss "));
        free(out);
    }
}

/* A `--save` file opens in Python's safetensors ($CTORCH_PYTHON, default python3; skipped where it
 * cannot import it): the model's plain names with their shapes, the training state beside them,
 * the metadata as strings. */
static void a_saved_run_opens_in_python_safetensors(void **state)
{
    (void)state;
    const char *python = getenv("CTORCH_PYTHON") ? getenv("CTORCH_PYTHON") : "python3";
    char command[2048], path[256];
    snprintf(command, sizeof command, "'%s' -c 'import numpy, safetensors.numpy' > /dev/null 2>&1", python);
    if (system(command) != 0) skip();
    ct_test_fresh_checkpoint_path(path, sizeof path, "ctorch_resume_test_");
    char args[512];
    snprintf(args, sizeof args, "train --device cpu --epochs 1 --save %s", path);
    free(succeeds(args));
    snprintf(command, sizeof command,
             "'%s' -c \"import sys\n"
             "from safetensors import safe_open\n"
             "from safetensors.numpy import load_file\n"
             "t = load_file(sys.argv[1])\n"
             "model = {k: v for k, v in t.items() if not k.startswith('optimizer.') and k != 'ctorch.rng_state'}\n"
             "assert sorted(model) == ['0.bias', '0.weight', '2.bias', '2.weight'], sorted(model)\n"
             "assert model['0.weight'].shape == (256, 64) and str(model['0.weight'].dtype) == 'float32'\n"
             "assert t['optimizer.state.0.exp_avg'].shape == (256, 64) and int(t['optimizer.state.0.step']) == 45\n"
             "with safe_open(sys.argv[1], 'np') as f: md = f.metadata()\n"
             "assert md['ctorch.train.epoch'] == '1' and md['ctorch.train.optimizer'] == 'adam', md\n"
             "\" %s 2>&1", python, path);
    int status;
    char *out = ct_test_run_command(command, &status);
    if (status != 0) fail_msg("Python's safetensors: status %d: %s", status, out);
    free(out);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resuming_gives_the_numbers_of_a_run_never_stopped),
        cmocka_unit_test(a_run_stopped_after_an_epoch_resumes_from_its_checkpoint),
        cmocka_unit_test(the_command_resumes_to_the_same_checkpoint),
        cmocka_unit_test(bad_values_exit_2_with_a_message),
        cmocka_unit_test(epoch_lines_name_their_accuracies),
        cmocka_unit_test(clipping_bounds_the_steps),
        cmocka_unit_test(the_bar_shows_the_loss_and_an_eta_on_a_terminal_only),
        cmocka_unit_test(a_saved_run_opens_in_python_safetensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
