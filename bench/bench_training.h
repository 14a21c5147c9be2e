/* The training-step benchmark's two implementations of one MLP step (forward, softmax
 * cross-entropy, backward, SGD, zero_grad): ctorch's (nn modules, autograd, optim) and a
 * hand-written one in C over cblas_sgemm, plus the check that they compute the same thing.
 *
 * The MLP: sizes[0] -> sizes[1] -> ... -> sizes[layers], a Linear (with bias) per step and a ReLU
 * between Linears (none after the last); the loss is the mean cross-entropy of the logits
 * against int64 class indices; plain SGD (no momentum) with learning rate lr. Float32. */
#ifndef CT_BENCH_TRAINING_H
#define CT_BENCH_TRAINING_H

#include <stdbool.h>
#include <stddef.h>

#include "ctorch.h"

#define CT_MLP_MAX_LAYERS 8

typedef struct ct_mlp_spec {
    int layers;                         /* Linear layers */
    int sizes[CT_MLP_MAX_LAYERS + 1];   /* features: sizes[0] in, sizes[layers] classes */
    int batch;
    double lr;
} ct_mlp_spec;

/* ---- ctorch's step ---- */
typedef struct ct_mlp_ctorch {
    ct_mlp_spec spec;
    ct_module *model;                   /* Sequential(Linear, ReLU, ..., Linear) */
    ct_optimizer *optimizer;
    ct_tensor *x, *target;              /* [batch, sizes[0]] float32, [batch] int64 */
    ct_tensor *weights[CT_MLP_MAX_LAYERS], *biases[CT_MLP_MAX_LAYERS]; /* the model's own */
    char error[512];                    /* what failed, when a call returns false */
} ct_mlp_ctorch;

/* Makes the model (PyTorch's Linear initialisation from seed) and a random batch (x ~ N(0, 1),
 * targets uniform over the classes) on device. false with m->error on failure (free it still). */
bool ct_mlp_ctorch_init(ct_mlp_ctorch *m, const ct_mlp_spec *spec, ct_device device, uint64_t seed);
/* One training step; the loss before the update goes to *loss unless loss is NULL (reading it
 * waits for the device). false with m->error on failure. */
bool ct_mlp_ctorch_step(ct_mlp_ctorch *m, double *loss);
void ct_mlp_ctorch_free(ct_mlp_ctorch *m);

/* ---- the hand-written step: cblas_sgemm for the matrix products, plain loops for the rest ----
 * Weights are [out, in] row-major as in ctorch; every buffer is allocated once. */
typedef struct ct_mlp_baseline {
    ct_mlp_spec spec;
    float *x;                           /* [batch, sizes[0]] */
    int64_t *target;                    /* [batch] */
    float *w[CT_MLP_MAX_LAYERS], *b[CT_MLP_MAX_LAYERS];
    float *dw[CT_MLP_MAX_LAYERS], *db[CT_MLP_MAX_LAYERS];
    float *act[CT_MLP_MAX_LAYERS];      /* layer l's output after its ReLU (the logits for the last) */
    float *grad_a, *grad_b;             /* [batch, widest]: gradients flowing back, ping-pong */
    char error[512];
} ct_mlp_baseline;

/* Allocates the buffers and copies the ctorch model's weights and batch (from any device).
 * false with b->error on failure (free it still). */
bool ct_mlp_baseline_init_from(ct_mlp_baseline *b, const ct_mlp_ctorch *m);
/* One training step; returns the loss before the update. */
double ct_mlp_baseline_step(ct_mlp_baseline *b);
void ct_mlp_baseline_free(ct_mlp_baseline *b);

/* Runs `steps` steps of each and checks that every step's loss agrees (relative 1e-4) and that
 * every weight's and bias's total change agrees with the hand-written one's (the largest
 * difference at most 1e-3 of the largest change, plus 1e-6; a parameter that did not change
 * fails). true when they agree; otherwise false with what differed in message. */
bool ct_mlp_compare_steps(ct_mlp_ctorch *m, ct_mlp_baseline *b, int steps, char *message, size_t size);
/* The same from a fresh model on device (ctorch's side) and a baseline copied from it. */
bool ct_mlp_check_agreement(const ct_mlp_spec *spec, ct_device device, int steps, char *message,
                            size_t size);

#endif
