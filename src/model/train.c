/*
 * ps_train_init(): the defaults of a training job (include/pipesched/model.h).
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/model.h>

#include <string.h>

void ps_train_init(ps_train *t)
{
    if (!t)
        return;
    memset(t, 0, sizeof *t);
    t->gpus = 8;
    t->gpus_per_node = 0; /* the hardware's devices_per_node */
    t->tp = t->pp = t->vpp = t->cp = t->ep = 1;
    t->etp = 0; /* = tp */
    /* On by default; it only acts when tp > 1 (model.h: "default 1 when tp > 1"), so a caller
     * who raises tp gets sequence parallelism without setting it. */
    t->sequence_parallel = 1;
    t->gbs = 8;
    t->mbs = 1;
    t->seq = 4096;
    t->precision = PS_PREC_BF16;
    t->recompute = PS_RECOMPUTE_NONE;
    t->recompute_layers = 0;
    t->distributed_optimizer = 0; /* off, as in Megatron-LM: --use-distributed-optimizer */
    t->overlap_grad_reduce = 1;
    t->overlap_param_gather = 1;
    t->schedule[0] = '\0'; /* interleaved when vpp > 1, else 1f1b */
    t->a2a = PS_A2A_AUTO;
    t->layout = NULL; /* even split */
    t->first_stage_layers = 0;
    t->last_stage_layers = 0;
}
