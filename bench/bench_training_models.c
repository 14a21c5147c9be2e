/* The MLP training step twice: through ctorch (Sequential of Linear and ReLU, ct_cross_entropy,
 * ct_backward, SGD) and by hand over cblas_sgemm; and the check that both compute the same step
 * (without it the benchmark would compare two different things). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_training.h"

/* ---- ctorch ---- */

/* Records what failed (with ctorch's message) and returns false. */
static bool failed(char *error, size_t size, const char *what)
{
    snprintf(error, size, "%s: %s", what, ct_last_error_message());
    return false;
}

bool ct_mlp_ctorch_init(ct_mlp_ctorch *m, const ct_mlp_spec *spec, ct_device device, uint64_t seed)
{
    memset(m, 0, sizeof *m);
    m->spec = *spec;
    if (spec->layers < 1 || spec->layers > CT_MLP_MAX_LAYERS) {
        snprintf(m->error, sizeof m->error, "mlp: %d layers; 1 to %d are possible", spec->layers,
                 CT_MLP_MAX_LAYERS);
        return false;
    }
    ct_manual_seed(seed);
    ct_module *layers[2 * CT_MLP_MAX_LAYERS];
    int count = 0;
    for (int l = 0; l < spec->layers; l++) {
        layers[count++] = ct_linear(spec->sizes[l], spec->sizes[l + 1], true);
        if (l + 1 < spec->layers) layers[count++] = ct_relu_module();
    }
    m->model = ct_sequential(layers, count); /* takes the layers, also on failure */
    if (!m->model || ct_module_to(m->model, device) != CT_OK)
        return failed(m->error, sizeof m->error, "making the model");
    for (int l = 0; l < spec->layers; l++) {
        ct_module *linear = ct_module_child_at(m->model, 2 * l);
        m->weights[l] = ct_module_parameter(linear, "weight");
        m->biases[l] = ct_module_parameter(linear, "bias");
        if (!m->weights[l] || !m->biases[l]) return failed(m->error, sizeof m->error, "the parameters");
    }
    ct_sgd_options options = ct_sgd_options_default(spec->lr);
    m->optimizer = ct_optim_sgd(m->model, &options);
    int64_t x_shape[2] = {spec->batch, spec->sizes[0]}, target_shape[1] = {spec->batch};
    m->x = ct_randn(x_shape, 2, CT_F32, device);
    m->target = ct_randint(0, spec->sizes[spec->layers], target_shape, 1, CT_I64, device);
    if (!m->optimizer || !m->x || !m->target)
        return failed(m->error, sizeof m->error, "the optimizer and the batch");
    return true;
}

bool ct_mlp_ctorch_step(ct_mlp_ctorch *m, double *loss)
{
    ct_tensor *logits = ct_module_forward(m->model, m->x);
    ct_tensor *l = logits ? ct_cross_entropy(logits, m->target, 0.0) : NULL;
    ct_release(logits);
    ct_status status = l ? ct_backward(l) : ct_last_error();
    if (status == CT_OK && loss) status = ct_item(l, loss);
    ct_release(l);
    if (status == CT_OK) status = ct_optimizer_step(m->optimizer);
    ct_optimizer_zero_grad(m->optimizer);
    return status == CT_OK || failed(m->error, sizeof m->error, "training step");
}

void ct_mlp_ctorch_free(ct_mlp_ctorch *m)
{
    for (int l = 0; l < CT_MLP_MAX_LAYERS; l++) {
        ct_release(m->weights[l]);
        ct_release(m->biases[l]);
    }
    ct_optimizer_free(m->optimizer);
    ct_module_release(m->model);
    ct_release(m->x);
    ct_release(m->target);
    memset(m, 0, sizeof *m);
}

/* ---- by hand ---- */

static float *floats(size_t count) { return malloc((count ? count : 1) * sizeof(float)); }

static int widest(const ct_mlp_spec *s)
{
    int w = 0;
    for (int l = 0; l <= s->layers; l++) w = s->sizes[l] > w ? s->sizes[l] : w;
    return w;
}

static bool copy_out(const ct_tensor *t, void *dst, size_t bytes)
{
    return ct_tensor_to_array(t, dst, bytes) == CT_OK;
}

bool ct_mlp_baseline_init_from(ct_mlp_baseline *b, const ct_mlp_ctorch *m)
{
    memset(b, 0, sizeof *b);
    const ct_mlp_spec *s = &m->spec;
    b->spec = *s;
    size_t batch = (size_t)s->batch;
    b->x = floats(batch * (size_t)s->sizes[0]);
    b->target = malloc(batch * sizeof *b->target + 1);
    b->grad_a = floats(batch * (size_t)widest(s));
    b->grad_b = floats(batch * (size_t)widest(s));
    bool ok = b->x && b->target && b->grad_a && b->grad_b;
    for (int l = 0; l < s->layers && ok; l++) {
        size_t in = (size_t)s->sizes[l], out = (size_t)s->sizes[l + 1];
        b->w[l] = floats(out * in);
        b->dw[l] = floats(out * in);
        b->b[l] = floats(out);
        b->db[l] = floats(out);
        b->act[l] = floats(batch * out);
        ok = b->w[l] && b->dw[l] && b->b[l] && b->db[l] && b->act[l];
        if (ok && (!copy_out(m->weights[l], b->w[l], out * in * sizeof(float)) ||
                   !copy_out(m->biases[l], b->b[l], out * sizeof(float))))
            return failed(b->error, sizeof b->error, "copying the weights");
    }
    if (!ok) {
        snprintf(b->error, sizeof b->error, "mlp baseline: no host memory");
        return false;
    }
    if (!copy_out(m->x, b->x, batch * (size_t)s->sizes[0] * sizeof(float)) ||
        !copy_out(m->target, b->target, batch * sizeof *b->target))
        return failed(b->error, sizeof b->error, "copying the batch");
    return true;
}

/* Mean cross-entropy of logits [n, classes] against target; writes its gradient
 * (softmax - one_hot) / n into grad. */
static double softmax_cross_entropy(const float *logits, const int64_t *target, int n, int classes,
                                    float *grad)
{
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * classes;
        float *g = grad + (size_t)i * classes;
        float max = z[0];
        for (int c = 1; c < classes; c++) max = z[c] > max ? z[c] : max;
        float sum = 0.0f;
        for (int c = 0; c < classes; c++) {
            g[c] = expf(z[c] - max);
            sum += g[c];
        }
        float inv = 1.0f / (sum * (float)n);
        for (int c = 0; c < classes; c++) g[c] *= inv;
        g[target[i]] -= 1.0f / (float)n;
        total += (double)logf(sum) + max - z[target[i]];
    }
    return total / n;
}

double ct_mlp_baseline_step(ct_mlp_baseline *b)
{
    const ct_mlp_spec *s = &b->spec;
    int n = s->batch, last = s->layers - 1;
    /* Forward: act[l] = relu(act[l-1] W^T + bias). */
    for (int l = 0; l <= last; l++) {
        int in = s->sizes[l], out = s->sizes[l + 1];
        const float *input = l ? b->act[l - 1] : b->x;
        float *y = b->act[l];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, input, in, b->w[l],
                    in, 0.0f, y, out);
        for (int i = 0; i < n; i++) {
            float *row = y + (size_t)i * out;
            if (l < last)
                for (int j = 0; j < out; j++) {
                    float v = row[j] + b->b[l][j];
                    row[j] = v > 0.0f ? v : 0.0f; /* (fmaxf is a libm call per element) */
                }
            else
                for (int j = 0; j < out; j++) row[j] += b->b[l][j];
        }
    }
    float *grad = b->grad_a, *grad_in = b->grad_b;
    double loss = softmax_cross_entropy(b->act[last], b->target, n, s->sizes[s->layers], grad);
    /* Backward: grad holds d loss / d (layer l's pre-activation output). */
    for (int l = last; l >= 0; l--) {
        int in = s->sizes[l], out = s->sizes[l + 1];
        const float *input = l ? b->act[l - 1] : b->x;
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, grad, out, input, in,
                    0.0f, b->dw[l], in);
        float *db = b->db[l];
        for (int j = 0; j < out; j++) db[j] = 0.0f;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < out; j++) db[j] += grad[(size_t)i * out + j];
        if (l == 0) break;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, grad, out, b->w[l],
                    in, 0.0f, grad_in, in);
        for (size_t k = 0; k < (size_t)n * in; k++) grad_in[k] = input[k] > 0.0f ? grad_in[k] : 0.0f;
        float *t = grad;
        grad = grad_in;
        grad_in = t;
    }
    /* SGD. */
    float lr = (float)s->lr;
    for (int l = 0; l <= last; l++) {
        size_t in = (size_t)s->sizes[l], out = (size_t)s->sizes[l + 1];
        for (size_t k = 0; k < out * in; k++) b->w[l][k] -= lr * b->dw[l][k];
        for (size_t k = 0; k < out; k++) b->b[l][k] -= lr * b->db[l][k];
    }
    return loss;
}

void ct_mlp_baseline_free(ct_mlp_baseline *b)
{
    for (int l = 0; l < CT_MLP_MAX_LAYERS; l++) {
        free(b->w[l]);
        free(b->b[l]);
        free(b->dw[l]);
        free(b->db[l]);
        free(b->act[l]);
    }
    free(b->x);
    free(b->target);
    free(b->grad_a);
    free(b->grad_b);
    memset(b, 0, sizeof *b);
}

/* ---- agreement ---- */

/* One parameter (a weight or a bias of one layer) of both models: its values before the steps,
 * from each side, and where each side keeps it. */
typedef struct parameter_pair {
    const ct_tensor *ctorch;
    const float *baseline;
    size_t count;
    float *ctorch_before, *baseline_before;
} parameter_pair;

static bool snapshot(parameter_pair *p, char *message, size_t size)
{
    p->ctorch_before = floats(p->count);
    p->baseline_before = floats(p->count);
    if (!p->ctorch_before || !p->baseline_before) {
        snprintf(message, size, "no host memory");
        return false;
    }
    memcpy(p->baseline_before, p->baseline, p->count * sizeof(float));
    if (ct_tensor_to_array(p->ctorch, p->ctorch_before, p->count * sizeof(float)) == CT_OK) return true;
    snprintf(message, size, "reading ctorch's parameters: %s", ct_last_error_message());
    return false;
}

/* Did both sides change the parameter alike? The largest difference between the two changes
 * must be within 1e-3 of the largest change (plus 1e-6), and something must have changed. */
static bool changed_alike(const parameter_pair *p, const char *what, int layer, char *message,
                          size_t size)
{
    float *now = floats(p->count);
    if (!now || ct_tensor_to_array(p->ctorch, now, p->count * sizeof(float)) != CT_OK) {
        snprintf(message, size, "reading layer %d's %s: %s", layer, what,
                 now ? ct_last_error_message() : "no host memory");
        free(now);
        return false;
    }
    double max_diff = 0.0, max_change = 0.0;
    for (size_t k = 0; k < p->count; k++) {
        double ct_change = (double)now[k] - p->ctorch_before[k];
        double base_change = (double)p->baseline[k] - p->baseline_before[k];
        max_diff = fmax(max_diff, fabs(ct_change - base_change));
        max_change = fmax(max_change, fabs(base_change));
    }
    free(now);
    if (max_change > 0.0 && max_diff <= 1e-3 * max_change + 1e-6) return true;
    snprintf(message, size, "layer %d's %s changed differently: the largest difference between the "
             "two updates is %.3g, the largest update %.3g", layer, what, max_diff, max_change);
    return false;
}

bool ct_mlp_compare_steps(ct_mlp_ctorch *m, ct_mlp_baseline *b, int steps, char *message, size_t size)
{
    const ct_mlp_spec *spec = &m->spec;
    parameter_pair pairs[2 * CT_MLP_MAX_LAYERS];
    memset(pairs, 0, sizeof pairs);
    int count = 2 * spec->layers;
    bool agree = false;
    for (int l = 0; l < spec->layers; l++) {
        size_t in = (size_t)spec->sizes[l], out = (size_t)spec->sizes[l + 1];
        pairs[2 * l] = (parameter_pair){.ctorch = m->weights[l], .baseline = b->w[l], .count = out * in};
        pairs[2 * l + 1] = (parameter_pair){.ctorch = m->biases[l], .baseline = b->b[l], .count = out};
    }
    for (int k = 0; k < count; k++)
        if (!snapshot(&pairs[k], message, size)) goto done;
    for (int step = 0; step < steps; step++) {
        double ct_loss = 0.0, base_loss = ct_mlp_baseline_step(b);
        if (!ct_mlp_ctorch_step(m, &ct_loss)) {
            snprintf(message, size, "ctorch's step %d failed: %s", step, m->error);
            goto done;
        }
        if (!(fabs(ct_loss - base_loss) <= 1e-4 * fabs(base_loss))) {
            snprintf(message, size, "the losses of step %d differ: ctorch %.7g, by hand %.7g", step,
                     ct_loss, base_loss);
            goto done;
        }
    }
    for (int k = 0; k < count; k++)
        if (!changed_alike(&pairs[k], k % 2 ? "bias" : "weight", k / 2, message, size)) goto done;
    agree = true;
    snprintf(message, size, "agree");
done:
    for (int k = 0; k < count; k++) {
        free(pairs[k].ctorch_before);
        free(pairs[k].baseline_before);
    }
    return agree;
}

bool ct_mlp_check_agreement(const ct_mlp_spec *spec, ct_device device, int steps, char *message,
                            size_t size)
{
    ct_mlp_ctorch m;
    ct_mlp_baseline b;
    memset(&b, 0, sizeof b);
    bool agree = false;
    if (!ct_mlp_ctorch_init(&m, spec, device, 1234))
        snprintf(message, size, "ctorch's setup failed: %s", m.error);
    else if (!ct_mlp_baseline_init_from(&b, &m))
        snprintf(message, size, "the baseline's setup failed: %s", b.error);
    else
        agree = ct_mlp_compare_steps(&m, &b, steps, message, size);
    ct_mlp_baseline_free(&b);
    ct_mlp_ctorch_free(&m);
    return agree;
}
