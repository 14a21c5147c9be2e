/* The C twin of a PyTorch tutorial's snippet (torch.distributed: DistributedDataParallel, one process per device):
 *
 *   CUDA_VISIBLE_DEVICES=0,1,2,3 python -m torch.distributed.launch --nproc_per_node=4 main.py
 *
 *   def parse():
 *       parser = argparse.ArgumentParser()
 *       parser.add_argument('--local_rank', type=int, default=0, help='node rank for distributed training')
 *       args = parser.parse_args()
 *       return args
 *
 *   def main():
 *       args = parse()
 *       torch.cuda.set_device(args.local_rank)
 *       torch.distributed.init_process_group('nccl', init_method='env://')
 *       device = torch.device(f'cuda:{args.local_rank}')
 *
 *   train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
 *   train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=..., sampler=train_sampler)
 *
 *   model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
 *
 * and what the seed leaves out, the training itself, a few epochs of
 *
 *   for epoch in range(epochs):
 *       train_sampler.set_epoch(epoch)
 *       for inputs, labels in train_loader:
 *           optimizer.zero_grad()
 *           loss = criterion(model(inputs), labels)
 *           loss.backward()          # DDP averages the gradients over the processes here
 *           optimizer.step()
 *       if rank == 0: print(...)
 *   torch.distributed.destroy_process_group()
 *
 * The launcher: MPI's, with a process per device,
 *
 *   mpirun -np 2 ./distributed_data_parallel
 *
 * (as root, or with more processes than cores: mpirun --allow-run-as-root --oversubscribe -np 2;
 * under Slurm: srun -n 2). mpirun tells each process its rank through the environment, as
 * torch.distributed.launch does with env://, and ct_dist_init (init_process_group) reads it; the
 * local rank (the process's index on its machine) comes from ct_dist_local_rank, and
 * --local_rank N, the seed's argument, overrides it. ct_dist_device picks the device from the
 * local rank: cuda:N, else opencl:N (modulo the device count), else the CPU; ct_set_device makes it
 * this thread's current device (torch.cuda.set_device). Started without mpirun, the program is a
 * job of one process, and DDP averages over that one.
 *
 * The data: the digits shipped with ctorch (1797 8x8 images, 10 classes). Each rank's sampler
 * gives it a disjoint share of them, reshuffled every epoch from the seed and the epoch: the
 * loader does the sampler's set_epoch at ct_data_loader_start_epoch. The model: Linear(64, 64),
 * ReLU, Linear(64, 10), with cross-entropy and SGD; wrapping it copies rank 0's initial weights to
 * every rank, so the replicas start equal and stay equal. Only rank 0 prints, as the seed's
 * scripts do: each epoch's loss averaged over the ranks, and at the end the accuracy of rank 0's
 * replica on the whole data set. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctorch.h"

/* Reports a failed call and leaves through the clean-up at the end of main. */
#define CHECK(expr)                                                                              \
    do {                                                                                         \
        if (!(expr)) {                                                                           \
            fprintf(stderr, "error (rank %d): %s\n", rank, ct_last_error_message());            \
            goto done;                                                                           \
        }                                                                                        \
    } while (0)

enum { BATCH_SIZE = 32, HIDDEN = 64, EPOCHS = 4 };

/* parse(): --local_rank N (or --local_rank=N); -1 when it is not given. */
static int parse_local_rank(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        if (strcmp(argv[i], "--local_rank") == 0 && i + 1 < argc)
            value = argv[i + 1];
        else if (strncmp(argv[i], "--local_rank=", 13) == 0)
            value = argv[i] + 13;
        if (value) return atoi(value);
    }
    return -1;
}

/* The device of local rank local_rank: of the type ct_dist_device chooses, index local_rank
 * modulo that type's device count (the CPU has one). */
static ct_status device_of_local_rank(int local_rank, ct_device *out)
{
    ct_status status = ct_dist_device(out);
    if (status != CT_OK || out->type == CT_CPU) return status;
    out->index = local_rank % ct_device_count(out->type);
    return CT_OK;
}

/* The fraction of the data set's samples the model classifies right (evaluation: no grad). */
static double accuracy(ct_module *model, const ct_dataset *data, ct_device device)
{
    double right = -1;
    ct_scope_push();
    ct_no_grad_push();
    ct_tensor *x = ct_to(ct_dataset_features(data), device);
    ct_tensor *labels = ct_to(ct_dataset_labels(data), device);
    ct_tensor *predicted = ct_argmax(ct_module_forward(model, x), 1, false);
    ct_tensor *hits = ct_to_dtype(ct_eq(predicted, labels), CT_F32);
    if (ct_item(ct_sum(hits, NULL, 0, false), &right) != CT_OK) right = -1;
    ct_no_grad_pop();
    ct_scope_pop();
    return right < 0 ? -1 : right / (double)ct_dataset_size(data);
}

int main(int argc, char **argv)
{
    int exit_code = 1, rank = -1;
    ct_dataset *dataset = NULL;
    ct_distributed_sampler *train_sampler = NULL;
    ct_data_loader *train_loader = NULL;
    ct_module *net = NULL, *model = NULL;
    ct_optimizer *optimizer = NULL;
    bool initialized = false, scoped = false;

    if (!ct_dist_is_available()) {
        printf("ctorch was built without MPI: no process group, nothing to show here\n");
        return 0;
    }
    /* args = parse(); torch.distributed.init_process_group(...) */
    int local_rank = parse_local_rank(argc, argv);
    CHECK(ct_dist_init() == CT_OK);
    initialized = true;
    rank = ct_dist_rank();
    int world_size = ct_dist_world_size();
    if (local_rank < 0) local_rank = ct_dist_local_rank();

    /* torch.cuda.set_device(args.local_rank); device = torch.device(f'cuda:{args.local_rank}') */
    ct_device device;
    CHECK(device_of_local_rank(local_rank, &device) == CT_OK);
    CHECK(ct_set_device(device) == CT_OK);
    char name[CT_DEVICE_STRING_MAX];
    if (rank == 0)
        printf("world size %d, backend %s; rank 0 (local rank %d) trains on %s\n", world_size,
               ct_dist_backend_name(device.type), local_rank, ct_device_format(device, name, sizeof name));
    ct_scope_push(); /* the tensors of main are released by the pop at the end */
    scoped = true;

    /* train_dataset: the digits, pixels scaled from 0..16 to 0..1 */
    const char *path = ct_default_dataset_path();
    CHECK(path);
    ct_csv_options csv = ct_csv_options_default();
    csv.feature_scale = 1.0 / 16;
    dataset = ct_csv_dataset_load(path, &csv);
    CHECK(dataset);

    /* train_sampler = DistributedSampler(train_dataset): this rank's share, shuffled by epoch */
    train_sampler = ct_distributed_sampler_create(ct_dataset_size(dataset), world_size, rank, NULL);
    CHECK(train_sampler);
    /* train_loader = DataLoader(train_dataset, batch_size=32, sampler=train_sampler) */
    ct_data_loader_options loader_options = ct_data_loader_options_default();
    loader_options.batch_size = BATCH_SIZE;
    loader_options.device = device;
    loader_options.sampler = train_sampler;
    train_loader = ct_data_loader_create(dataset, &loader_options);
    CHECK(train_loader);
    if (rank == 0)
        printf("%" PRId64 " samples: %" PRId64 " per rank and epoch, %" PRId64 " batches of up to %d\n",
               ct_dataset_size(dataset), ct_distributed_sampler_num_samples(train_sampler),
               ct_data_loader_num_batches(train_loader), BATCH_SIZE);

    /* model = DistributedDataParallel(model.to(device)): rank 0's initial weights go to every rank */
    ct_manual_seed(100 + (uint64_t)rank); /* different on each rank: wrapping makes them equal */
    model = ct_sequential((ct_module *[]){ct_linear(ct_dataset_num_features(dataset), HIDDEN, true),
                                          ct_relu_module(),
                                          ct_linear(HIDDEN, ct_dataset_num_classes(dataset), true)}, 3);
    CHECK(model);
    CHECK(ct_module_to(model, device) == CT_OK);
    net = ct_distributed_data_parallel(model, NULL);
    CHECK(net);
    ct_sgd_options sgd = ct_sgd_options_default(0.1);
    sgd.momentum = 0.9;
    optimizer = ct_optim_sgd(net, &sgd);
    CHECK(optimizer);

    double first_loss = 0, last_loss = 0;
    for (int epoch = 0; epoch < EPOCHS; epoch++) {
        /* train_sampler.set_epoch(epoch): the loader's copy of the sampler takes the epoch */
        CHECK(ct_data_loader_start_epoch(train_loader, epoch) == CT_OK);
        double loss_sum = 0;
        int64_t batches = 0;
        ct_tensor *inputs, *labels;
        ct_status status;
        while ((status = ct_data_loader_next(train_loader, &inputs, &labels)) == CT_OK) {
            ct_scope_push();
            ct_optimizer_zero_grad(optimizer);
            ct_tensor *loss = ct_cross_entropy(ct_module_forward(net, inputs), labels, 0.0);
            double value = 0;
            status = loss ? ct_backward(loss) : ct_last_error(); /* the gradients' average over the ranks */
            if (status == CT_OK) status = ct_optimizer_step(optimizer);
            if (status == CT_OK) status = ct_item(loss, &value);
            ct_scope_pop();
            ct_release(inputs);
            ct_release(labels);
            CHECK(status == CT_OK);
            loss_sum += value;
            batches++;
        }
        CHECK(status == CT_END_OF_DATA);
        /* Every rank's mean loss, averaged over the ranks (a collective: every rank calls it). */
        int64_t one[1] = {1};
        ct_tensor *epoch_loss = ct_full(one, 1, batches ? loss_sum / (double)batches : 0.0, CT_F64, CT_DEVICE_CPU);
        CHECK(epoch_loss);
        CHECK(ct_dist_all_reduce(epoch_loss, CT_REDUCE_AVG) == CT_OK);
        CHECK(ct_item(epoch_loss, &last_loss) == CT_OK);
        ct_release(epoch_loss);
        if (epoch == 0) first_loss = last_loss;
        if (rank == 0) printf("epoch %d loss %.4f\n", epoch, last_loss);
    }

    /* Evaluation on rank 0 alone: without grad, the wrapper communicates nothing. */
    if (rank == 0) {
        double right = accuracy(net, dataset, device);
        CHECK(right >= 0);
        printf("accuracy of rank 0's replica on all %" PRId64 " samples: %.1f%%\n", ct_dataset_size(dataset),
               100 * right);
    }
    if (!(last_loss < first_loss)) {
        fprintf(stderr, "error (rank %d): the loss did not decrease: %.4f in the first epoch, %.4f in the last\n",
                rank, first_loss, last_loss);
        goto done;
    }
    exit_code = 0;

done:
    ct_optimizer_free(optimizer);
    ct_module_release(net);
    ct_module_release(model);
    ct_data_loader_destroy(train_loader);
    ct_distributed_sampler_free(train_sampler);
    ct_dataset_free(dataset);
    if (scoped) ct_scope_pop();
    /* torch.distributed.destroy_process_group(). A rank that failed ends the whole job instead:
     * the others may be waiting for it in a collective. */
    if (exit_code != 0 && initialized) ct_dist_abort(exit_code);
    ct_dist_finalize();
    return exit_code;
}
