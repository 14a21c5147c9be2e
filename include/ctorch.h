/* ctorch: PyTorch's device model in C. This header gathers the public API. */
#ifndef CTORCH_H
#define CTORCH_H

#include "ctorch/core.h"
#include "ctorch/device.h"
#include "ctorch/cpu.h"
#include "ctorch/alloc.h"
#include "ctorch/tensor.h"
#include "ctorch/ops.h"
#include "ctorch/stream.h"
#include "ctorch/graph.h"
#include "ctorch/autograd.h"
#include "ctorch/data.h"
#include "ctorch/io.h"
#include "ctorch/nn_functional.h"
#include "ctorch/nn.h"
#include "ctorch/optim.h"
#include "ctorch/amp.h"
#include "ctorch/distributed.h"
#include "ctorch/parallel.h"
#include "ctorch/models.h"

#endif
