/* The check of gpt_fixture.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cjson/cJSON.h"
#include "gpt_fixture.h"

/* got (any device) against PyTorch's want, float32: each element within float32 rounding of sums
 * of this model's length, relative to the tensor's largest magnitude. */
static bool agrees(const char *what, const ct_tensor *got, const ct_tensor *want, char *failure, size_t capacity)
{
    if (!got || !want) {
        snprintf(failure, capacity, "%s: %s (%s)", what, got ? "not in the fixture" : "none computed",
                 ct_last_error_message());
        return false;
    }
    int64_t n = ct_numel(want);
    if (ct_numel(got) != n) {
        snprintf(failure, capacity, "%s: %lld elements, PyTorch has %lld", what, (long long)ct_numel(got),
                 (long long)n);
        return false;
    }
    ct_tensor *got32 = ct_to_dtype(got, CT_F32);
    float *g = malloc((size_t)n * sizeof *g), *w = malloc((size_t)n * sizeof *w);
    bool ok = got32 && g && w && ct_tensor_to_array(got32, g, (size_t)n * sizeof *g) == CT_OK &&
              ct_tensor_to_array(want, w, (size_t)n * sizeof *w) == CT_OK;
    if (!ok) snprintf(failure, capacity, "%s: could not read the values back (%s)", what, ct_last_error_message());
    double largest = 0;
    for (int64_t i = 0; ok && i < n; i++) largest = fmax(largest, fabs(w[i]));
    for (int64_t i = 0; ok && i < n; i++)
        if (!(fabs((double)g[i] - w[i]) <= 1e-6 + 2e-5 * largest + 1e-4 * fabs(w[i]))) {
            snprintf(failure, capacity, "%s[%lld]: ctorch %.9g, PyTorch %.9g (largest |value| %.3g)", what,
                     (long long)i, g[i], w[i], largest);
            ok = false;
        }
    free(g), free(w);
    ct_release(got32);
    return ok;
}

static double number(const cJSON *object, const char *name)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, name);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

/* The config and AdamW's settings from the fixture's __metadata__. */
static bool settings(const ct_state_dict *want, ct_gpt_config *config, double adamw[5], char *failure,
                     size_t capacity)
{
    cJSON *c = cJSON_Parse(ct_state_dict_metadata(want, "config") ? ct_state_dict_metadata(want, "config") : "");
    cJSON *a = cJSON_Parse(ct_state_dict_metadata(want, "adamw") ? ct_state_dict_metadata(want, "adamw") : "");
    bool ok = c && a;
    if (ok) {
        *config = (ct_gpt_config){(int64_t)number(c, "vocab_size"), (int64_t)number(c, "padded_vocab_size"),
                                  (int64_t)number(c, "block_size"), (int64_t)number(c, "n_layer"),
                                  (int64_t)number(c, "n_head"),     (int64_t)number(c, "n_embd"),
                                  number(c, "dropout"),             cJSON_IsTrue(cJSON_GetObjectItem(c, "bias"))};
        const char *keys[5] = {"lr", "weight_decay", "beta1", "beta2", "steps"};
        for (int i = 0; i < 5; i++) adamw[i] = number(a, keys[i]);
    } else {
        snprintf(failure, capacity, "the fixture's __metadata__ lacks its config or AdamW settings");
    }
    cJSON_Delete(c);
    cJSON_Delete(a);
    return ok;
}

/* The fixture's parameters alone (nanoGPT's state_dict names: the tensors of the model's names). */
static ct_state_dict *weights_of(const ct_state_dict *want)
{
    ct_state_dict *sd = ct_state_dict_create();
    for (int64_t i = 0; sd && i < ct_state_dict_count(want); i++) {
        const char *name = ct_state_dict_name_at(want, i);
        if (strncmp(name, "transformer.", 12) && strcmp(name, "lm_head.weight")) continue;
        ct_tensor *t = ct_state_dict_tensor_at(want, i);
        ct_state_dict_add(sd, name, t);
        ct_release(t);
    }
    return sd;
}

static bool check(const ct_state_dict *want, ct_device device, char *failure, size_t capacity)
{
    ct_gpt_config config;
    double adamw[5];
    if (!settings(want, &config, adamw, failure, capacity)) return false;
    ct_module *gpt = ct_gpt(&config);
    ct_state_dict *weights = weights_of(want);
    bool ok = gpt && weights && ct_gpt_load_state_dict(gpt, weights) == CT_OK && ct_module_to(gpt, device) == CT_OK;
    ct_state_dict_free(weights);
    ct_optimizer *optimizer = ok ? ct_gpt_configure_optimizers(gpt, adamw[0], adamw[1], adamw[2], adamw[3]) : NULL;
    ct_tensor *idx = ct_to(ct_state_dict_get(want, "idx"), device);
    ct_tensor *targets = ct_to(ct_state_dict_get(want, "targets"), device);
    if (!optimizer || !idx || !targets) {
        snprintf(failure, capacity, "the GPT could not be made on the device: %s", ct_last_error_message());
        ct_module_release(gpt);
        return false;
    }
    ct_tensor *losses_want = ct_state_dict_get(want, "adamw_losses");
    int steps = (int)adamw[4];
    float expected[16];
    ok = steps > 0 && steps <= 16 && losses_want &&
         ct_tensor_to_array(losses_want, expected, sizeof(float) * (size_t)steps) == CT_OK;
    if (!ok) snprintf(failure, capacity, "the fixture's adamw_losses are missing");
    ct_named_tensors *params = ok ? ct_module_named_parameters(gpt) : NULL;
    for (int step = 0; ok && step < steps; step++) {
        ct_tensor *logits = NULL, *loss = NULL;
        ct_optimizer_zero_grad(optimizer);
        ok = ct_gpt_forward(gpt, idx, targets, &logits, &loss) == CT_OK && ct_backward(loss) == CT_OK;
        if (!ok) {
            snprintf(failure, capacity, "step %d: the forward or backward failed: %s", step, ct_last_error_message());
            break;
        }
        if (step == 0) {
            ok = agrees("logits", logits, ct_state_dict_get(want, "logits"), failure, capacity) &&
                 agrees("loss", loss, ct_state_dict_get(want, "loss"), failure, capacity);
            for (int64_t i = 0; ok && i < params->count; i++) {
                char name[160];
                snprintf(name, sizeof name, "grad.%s", params->names[i]);
                ok = agrees(name, ct_grad(params->tensors[i]), ct_state_dict_get(want, name), failure, capacity);
            }
        }
        double value = NAN;
        if (ok && ct_item(loss, &value) == CT_OK && !(fabs(value - expected[step]) <= 1e-4 * fabs(expected[step]))) {
            snprintf(failure, capacity, "AdamW step %d: loss %.9g, PyTorch %.9g", step, value, expected[step]);
            ok = false;
        }
        if (ok && ct_optimizer_step(optimizer) != CT_OK) {
            snprintf(failure, capacity, "AdamW step %d failed: %s", step, ct_last_error_message());
            ok = false;
        }
    }
    ct_named_tensors_free(params);
    ct_optimizer_free(optimizer);
    ct_module_release(gpt);
    return ok;
}

bool ct_test_gpt_matches_pytorch(const char *fixture_path, ct_device device, char *failure, size_t capacity)
{
    ct_state_dict *want = ct_load(fixture_path, "cpu");
    if (!want) {
        snprintf(failure, capacity, "%s: %s", fixture_path, ct_last_error_message());
        return false;
    }
    ct_scope_push(); /* every tensor made below is released at the pop */
    bool ok = check(want, device, failure, capacity);
    ct_scope_pop();
    ct_state_dict_free(want);
    return ok;
}
