/*
 * The options of pipesched, each declared once.
 *
 * A row gives an option's names, its argument (type, range, choices), its help, the commands
 * that take it and the field of cli_opts that receives its value. parse.c builds
 * getopt_long's table from the rows, so an option cannot be accepted without being
 * documented, and takes the messages for a bad value from the row's range; help.c prints the
 * same rows as the help screens and as the option list of docs/guide.md.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <pipesched/balance.h>
#include <pipesched/model.h>

#include <string.h>

/* Where a value goes. _Generic refuses a field whose type does not match the argument's, so a
 * row cannot write a double into an int. */
#define AT(field, T) _Generic(((cli_opts *)0)->field, T : offsetof(cli_opts, field))
#define FLAG(field) .type = CLI_FLAG, .offset = AT(field, int)
#define STRING(field) .type = CLI_STRING, .offset = AT(field, const char *)
#define INT(field, lo_, hi_) .type = CLI_INT, .offset = AT(field, long long), .lo = lo_, .hi = hi_
#define DECIMAL(field, lo_, hi_)                                                                   \
    .type = CLI_DECIMAL, .offset = AT(field, double), .dlo = lo_, .dhi = hi_
#define CHOICE(field, list, noun_)                                                                 \
    .type = CLI_CHOICE, .offset = AT(field, int), .choices = list, .noun = noun_

/* The commands that build a schedule from the schedule options; check reads its schedule from
 * a file, and plan models its costs with the MoE model instead of --costs. */
#define SCHEDULE_COMMANDS "generate simulate run plan draw " BALANCE_DATA
#define COST_COMMANDS "generate simulate check run draw"
#define INPUT_COMMANDS "generate simulate check run plan draw"
/* The options of the performance model: a real model, real hardware, a parallel setup. Their
 * aliases are Megatron-LM's names of the same settings. */
#define EST "estimate"
/* The subcommands of balance (docs/balance.md), named by both words. */
#define BALANCE_DATA "balance data"
#define BALANCE_EXPERTS "balance experts"

static const cli_choice formats[] = {{"table", PS_FORMAT_TABLE},
                                     {"json", PS_FORMAT_JSON},
                                     {"csv", PS_FORMAT_CSV},
                                     {"csv-comms", PS_FORMAT_CSV_COMMS},
                                     {NULL, 0}};
/* The names of ps_planner_name(), which `plan --method` tests. */
static const cli_choice planners[] = {{"adaptive", PS_PLANNER_ADAPTIVE},
                                      {"mindspeed", PS_PLANNER_MINDSPEED},
                                      {"megatron", PS_PLANNER_MEGATRON},
                                      {"serial", PS_PLANNER_SERIAL},
                                      {NULL, 0}};
static const cli_choice precisions[] = {{"bf16", PS_PREC_BF16}, {"fp8", PS_PREC_FP8}, {NULL, 0}};
static const cli_choice recomputes[] = {{"none", PS_RECOMPUTE_NONE},
                                        {"selective", PS_RECOMPUTE_SELECTIVE},
                                        {"full", PS_RECOMPUTE_FULL},
                                        {NULL, 0}};
static const cli_choice a2as[] = {
    {"auto", PS_A2A_AUTO}, {"flat", PS_A2A_FLAT}, {"hierarchical", PS_A2A_HIERARCHICAL}, {NULL, 0}};
static const cli_choice kinds[] = {{"timeline", CLI_KIND_TIMELINE},
                                   {"overlap", CLI_KIND_OVERLAP},
                                   {"dag", CLI_KIND_DAG},
                                   {NULL, 0}};

/* In the order of the help screens. The aliases are Megatron-LM's names, so that a launch
 * script's flags can be pasted. */
const cli_option cli_options[] = {
    {.name = "schedule",
     .letter = 's',
     STRING(schedule),
     .metavar = "NAME",
     .def = "`1f1b`; estimate: `interleaved` when vpp > 1, else `1f1b`",
     .commands = SCHEDULE_COMMANDS " estimate",
     .help = "schedule family or alias (see `pipesched list`)"},
    {.name = "pp",
     .letter = 'p',
     .aliases = {"pipeline-model-parallel-size"},
     INT(pp, 1, PS_MAX_PP),
     .metavar = "N",
     .def = "4; estimate: required",
     .commands = SCHEDULE_COMMANDS " estimate",
     .help = "pipeline ranks"},
    {.name = "vpp",
     .letter = 'v',
     .aliases = {"virtual-pipeline-model-parallel-size"},
     INT(vpp, 1, PS_MAX_VPP),
     .metavar = "N",
     .def = "the family's: 2 for `zb-v`, `v-half`, `v-min`, else 1",
     .commands = SCHEDULE_COMMANDS " estimate",
     .help = "chunks (virtual stages) per rank"},
    {.name = "microbatches",
     .letter = 'm',
     INT(m, 1, PS_MAX_MICROBATCHES),
     .metavar = "N",
     .def = "8; check: from the file; balance data: required",
     .commands = INPUT_COMMANDS " " BALANCE_DATA,
     .help = "micro-batches per iteration"},
    {.name = "group-size",
     .aliases = {"microbatch-group-size-per-virtual-pipeline-stage"},
     INT(group, 1, PS_MAX_MICROBATCHES),
     .metavar = "N",
     .def = "pp",
     .commands = SCHEDULE_COMMANDS " " EST,
     .help = "interleaved/adaptive micro-batch group size (default pp)",
     .doc = "Refused by the other families."},
    {.name = "costs",
     STRING(costs),
     .metavar = "SPEC",
     .def = "`f=1,b=1,w=1,c=0`",
     .commands = COST_COMMANDS " " BALANCE_DATA,
     .help = "per-chunk costs, e.g. f=1,b=1,w=1,c=0 (fb = fused pair)",
     .doc = "Any subset of the keys. With a MoE model in the config only `c` applies: a warning "
            "names the keys it ignores."},
    {.name = "memory",
     STRING(memory),
     .metavar = "SPEC",
     .def = "`f=1,b=-0.5,w=-0.5`",
     .commands = COST_COMMANDS,
     .help = "memory per chunk: F adds f, I adds b, W adds w (f+b+w = 0),\n"
             "default f=1,b=-0.5,w=-0.5",
     .doc = "Any subset of the keys; section 1, \"Memory model\"."},
    {.name = "mb-weights",
     STRING(mb_weights),
     .metavar = "W0,W1,...",
     .def = "all 1",
     .commands = COST_COMMANDS,
     .help = "cost weight of each micro-batch (one per micro-batch): its\n"
             "F, I, W and B cost the stage's cost times its weight",
     .doc = "Uneven micro-batches (packed sequences of different document lengths). A fused "
            "pair weighs its forward part with the forward's weight and its backward part with "
            "the backward's; zb-auto schedules with the weights. Replaces the config's "
            "`microbatch_weights`."},
    {.name = "mem-limit",
     DECIMAL(mem_limit, 0, PS_MAX_COST),
     .note = "0 = none",
     .metavar = "X",
     .def = "0",
     .commands = COST_COMMANDS,
     .help = "per-rank memory limit (0 = none): simulation rejects a\n"
             "schedule above it; zb-auto schedules under it",
     .doc = "A simulation above it fails with exit status 1."},
    {.name = "extra-warmup",
     INT(extra_warmup, 0, PS_MAX_MICROBATCHES),
     .metavar = "N",
     .def = "1",
     .commands = SCHEDULE_COMMANDS " " EST,
     .help = "adaptive: extra warm-up forwards before the fused steady\n"
             "phase (default 1)",
     .doc = "estimate: at least 1."},
    {.name = "split-backward",
     FLAG(split_backward),
     .commands = SCHEDULE_COMMANDS " " EST,
     .help = "adaptive: each cool-down backward as I then W, so the\n"
             "input gradient leaves earlier"},
    {.name = "config",
     STRING(config),
     .metavar = "FILE",
     .commands = INPUT_COMMANDS " estimate tune " BALANCE_DATA,
     .help = "JSON configuration (docs/config.md); flags override it",
     .doc = "`-` reads standard input. tune: an object whose keys are tune's options "
            "(docs/tune.md)."},
    {.name = "method",
     CHOICE(method, planners, "planner method"),
     .metavar = "NAME",
     .def = "`adaptive`",
     .commands = "plan draw",
     .help = "planner: adaptive (default), mindspeed, megatron, serial"},
    {.name = "fstage",
     INT(fstage, 0, PS_MAX_STAGES - 1),
     .metavar = "N",
     .def = "the first stage with the most MoE layers",
     .commands = "plan draw",
     .help = "model stage of the fused pair's forward (default: the\n"
             "first stage with the most MoE layers)"},
    {.name = "bstage",
     INT(bstage, 0, PS_MAX_STAGES - 1),
     .metavar = "N",
     .def = "`--fstage`",
     .commands = "plan draw",
     .help = "model stage of its backward (default: --fstage)"},
    {.name = "format",
     .letter = 'f',
     CHOICE(format, formats, "format"),
     .metavar = "FMT",
     .def = "`table`",
     .commands = "generate simulate check"},
    {.name = "timed",
     FLAG(timed),
     .commands = "generate",
     .help = "simulate: the table gets one column per time unit, the\n"
             "JSON start/end times and metrics"},
    {.name = "width",
     INT(width, 20, 1000000),
     .metavar = "N",
     .def = "none (at most 4000 columns)",
     .commands = "generate simulate check",
     .help = "timed table: rows of at most N characters; a column\n"
             "covers more time until the run fits",
     .doc = "Actions that round into a column already drawn are counted in the legend line, not "
            "shown. Refused with the other outputs."},
    {.name = "json",
     FLAG(json),
     .commands = "list simulate check run plan estimate tune " BALANCE_DATA " " BALANCE_EXPERTS},
    {.name = "trace",
     STRING(trace),
     .metavar = "FILE",
     .commands = "simulate check run " EST,
     .help = "write a Chrome/Perfetto trace (1 cost unit = 1 ms)"},
    {.name = "time-scale",
     DECIMAL(time_scale, 0, 10),
     .lo_open = 1,
     .unit = "seconds per cost unit",
     .metavar = "S",
     .def = "0.001",
     .commands = "run",
     .help = "seconds of real time per cost unit (default 0.001)"},
    {.name = "kind",
     CHOICE(kind, kinds, "kind"),
     .metavar = "KIND",
     .def = "`timeline`",
     .commands = "draw",
     .help = "timeline (default), overlap or dag"},
    {.name = "from",
     DECIMAL(from, 0, 1e300),
     .metavar = "T",
     .def = "0",
     .commands = "draw",
     .help = "timeline: draw from time T (the axis starts there)"},
    {.name = "to",
     DECIMAL(to, 0, 1e300),
     .lo_open = 1,
     .metavar = "T",
     .def = "the makespan",
     .commands = "draw",
     .help = "timeline: draw up to time T",
     .doc = "Above `--from`; actions that cross either end are drawn clipped."},
    {.name = "overview",
     FLAG(overview),
     .commands = "draw",
     .help = "timeline: the whole run (or window) at a readable size as\n"
             "per-rank busy/idle bands, each lane with its idle fraction"},
    {.name = "model",
     STRING(model),
     .metavar = "NAME|FILE",
     .commands = EST " tune " BALANCE_DATA " " BALANCE_EXPERTS,
     .help = "a built-in model (docs/models.md) or a HuggingFace config.json"},
    {.name = "hardware",
     STRING(hardware),
     .metavar = "NAME|FILE",
     .commands = EST " tune " BALANCE_DATA " " BALANCE_EXPERTS,
     .help = "a hardware preset (docs/hardware.md) or a hardware file"},
    {.name = "gpus", INT(gpus, 1, 1 << 24), .metavar = "N", .commands = EST, .help = "devices"},
    {.name = "gpus",
     STRING(tune_gpus),
     .metavar = "N|A,B,..|A-B",
     .commands = "tune",
     .help = "devices: one count, a list 64,128,256, or a range A-B\n"
             "meaning every power of two from A to B; several counts\n"
             "rank together and add GPUs to the Pareto front",
     .doc = "A range `64-512` is 64, 128, 256, 512; `48-200` is 64, 128. At most 64 counts, "
            "each from 1 to 16777216."},
    {.name = "gpus-per-node",
     INT(gpus_per_node, 1, 4096),
     .metavar = "G",
     .def = "the hardware's",
     .commands = EST " tune",
     .help = "devices per node (default: the hardware's)"},
    {.name = "tp",
     .aliases = {"tensor-model-parallel-size"},
     INT(tp, 1, 4096),
     .metavar = "T",
     .commands = EST,
     .help = "tensor parallelism"},
    {.name = "cp",
     .aliases = {"context-parallel-size"},
     INT(cp, 1, 4096),
     .metavar = "C",
     .def = "1",
     .commands = EST,
     .help = "context parallelism (default 1)"},
    {.name = "ep",
     .aliases = {"expert-model-parallel-size"},
     INT(ep, 1, 1 << 20),
     .metavar = "E",
     .def = "1",
     .commands = EST,
     .help = "expert parallelism (default 1)"},
    {.name = "etp",
     .aliases = {"expert-tensor-parallel-size"},
     INT(etp, 1, 4096),
     .metavar = "T",
     .def = "tp",
     .commands = EST,
     .help = "expert tensor parallelism (default: tp)"},
    {.name = "gbs",
     .aliases = {"global-batch-size"},
     INT(gbs, 1, 1LL << 40),
     .metavar = "B",
     .commands = EST " tune",
     .help = "global batch, sequences"},
    {.name = "mbs",
     .aliases = {"micro-batch-size"},
     INT(mbs, 1, 1 << 20),
     .metavar = "b",
     .def = "balance data: samples / (dp · microbatches)",
     .commands = EST " " BALANCE_DATA,
     .help = "micro-batch size, sequences"},
    {.name = "seq",
     .aliases = {"seq-length"},
     INT(seq, 1, 1 << 26),
     .metavar = "S",
     .commands = EST " tune",
     .help = "sequence length, tokens"},
    {.name = "precision",
     CHOICE(precision, precisions, "precision"),
     .metavar = "P",
     .def = "`bf16`",
     .commands = EST " " BALANCE_EXPERTS,
     .help = "bf16 (default) or fp8 GEMMs"},
    {.name = "recompute",
     .aliases = {"recompute-granularity"},
     CHOICE(recompute, recomputes, "recompute mode"),
     .metavar = "MODE",
     .def = "`none`",
     .commands = EST,
     .help = "activation recompute: none (default), selective, full"},
    {.name = "recompute-layers",
     .aliases = {"recompute-num-layers"},
     INT(recompute_layers, 0, 1 << 20),
     .metavar = "N",
     .def = "0 = all",
     .commands = EST,
     .help = "full recompute: layers recomputed per stage (default all)"},
    {.name = "distributed-optimizer",
     .aliases = {"use-distributed-optimizer"},
     FLAG(distributed_optimizer),
     .commands = EST,
     .help = "shard the optimizer state over data parallelism"},
    {.name = "moe-token-drop",
     FLAG(moe_token_drop),
     .commands = EST,
     .help = "MoE layers with a token capacity (drop and pad): no host\n"
             "synchronisation on the routing (the hardware's moe_layer_us\n"
             "is not spent); default dropless"},
    {.name = "no-overlap",
     FLAG(no_overlap),
     .commands = EST,
     .help = "data-parallel gradient reduce and parameter gather do not\n"
             "overlap the backward and forward (default: they do)"},
    {.name = "layout",
     .aliases = {"pipeline-model-parallel-layout"},
     STRING(layout),
     .metavar = "STRING",
     .def = "even",
     .commands = EST,
     .help = "Megatron pipeline layout, e.g. \"Et*3|t*4|t*4|t*3L\"; \"auto\",\n"
             "\"balanced\" (the split closest to even), or \"first\", \"last\",\n"
             "\"first-last\" (fewer layers on those ranks; docs/layout.md)"},
    {.name = "first-stage-layers",
     .aliases = {"decoder-first-pipeline-num-layers"},
     INT(first_layers, 1, 1 << 20),
     .metavar = "N",
     .def = "even",
     .commands = EST,
     .help = "decoder layers of the first pipeline rank, over its vpp\n"
             "chunks (the rest even; docs/layout.md)"},
    {.name = "last-stage-layers",
     .aliases = {"decoder-last-pipeline-num-layers"},
     INT(last_layers, 1, 1 << 20),
     .metavar = "N",
     .def = "even",
     .commands = EST,
     .help = "decoder layers of the last pipeline rank, over its vpp\n"
             "chunks (the rest even; docs/layout.md)"},
    {.name = "svg",
     STRING(svg),
     .metavar = "FILE",
     .commands = EST " tune",
     .help = "draw the simulated pipeline as an SVG timeline in seconds\n"
             "(builds with Graphviz; tune: of the row --draw names)",
     .doc = "Without Graphviz (no `draw` command) it exits with status 2."},
    {.name = "output",
     .letter = 'o',
     STRING(output),
     .metavar = "FILE",
     .def = "stdout; draw: required",
     .commands = INPUT_COMMANDS " estimate tune " BALANCE_DATA " " BALANCE_EXPERTS,
     .help = "write the output to FILE instead of stdout"},
    {.name = "help", .letter = 'h', FLAG(help), .commands = "*", .help = "this help"},
    /* estimate's all-to-all, and the search (tune, docs/tune.md). */
    {.name = "a2a",
     CHOICE(a2a, a2as, "all-to-all algorithm"),
     .metavar = "ALG",
     .def = "`auto`",
     .commands = EST,
     .help = "MoE all-to-all: auto (the cheaper), flat, hierarchical"},
    {.name = "fix",
     STRING(tune_fix),
     .once = 1,
     .metavar = "K=V,...",
     .commands = "tune",
     .help = "fix knobs, e.g. tp=8,schedule=interleaved (knobs: tp cp pp\n"
             "ep etp vpp schedule mbs recompute distributed-optimizer\n"
             "precision a2a layout group warmup split-backward)",
     .doc = "Given once (a second `--fix` is refused); a knob named here cannot also be in "
            "`--allow`."},
    {.name = "allow",
     STRING(tune_allow),
     .once = 1,
     .metavar = "K=V,V,...",
     .commands = "tune",
     .help = "the values a knob may take, e.g. tp=4,8,schedule=1f1b,zb-v;\n"
             "precision=bf16,fp8 lets the search try FP8",
     .doc = "A word with `=` starts the next knob. Given once."},
    {.name = "max",
     STRING(tune_max),
     .once = 1,
     .metavar = "K=V,...",
     .commands = "tune",
     .help = "largest value of numeric knobs, e.g. tp=8,pp=16",
     .doc = "Given once."},
    {.name = "mem-reserve-gib",
     DECIMAL(mem_reserve, 0, 1e6),
     .metavar = "G",
     .def = "0",
     .commands = "tune",
     .help = "memory kept free per device: a configuration fits when\n"
             "its peak is at most hbm_gib - G"},
    {.name = "threads",
     INT(threads, 0, 256),
     .metavar = "N",
     .def = "0 = every core",
     .commands = "tune",
     .help = "search threads (default: every core; under mpirun, per\n"
             "process: the cores over the node's processes)"},
    {.name = "top",
     INT(top, 1, 10000),
     .metavar = "K",
     .def = "10",
     .commands = "tune",
     .help = "configurations in the ranking (default 10)"},
    {.name = "csv",
     STRING(csv),
     .metavar = "FILE",
     .commands = "tune",
     .help = "write every candidate, its outcome and figures as CSV, as the search\n"
             "goes (in memory that does not grow with the space)"},
    {.name = "draw",
     INT(draw, 1, 10000),
     .metavar = "N",
     .commands = "tune",
     .help = "write the timeline of row N of the ranking (1 = the fastest)\n"
             "to the --svg FILE",
     .doc = "Needs `--svg FILE` and a build with Graphviz; a row past the ranking exits with "
            "status 2."},
    {.name = "pareto-svg",
     STRING(pareto_svg),
     .metavar = "FILE",
     .commands = "tune",
     .help = "draw the Pareto front (step time against peak memory) as\n"
             "an SVG scatter plot, each point labelled with its knobs",
     .doc = "Needs a build with Graphviz; with several `--gpus` counts the points are the "
            "front against GPU count too, each labelled with its count."},
    {.name = "no-prune",
     FLAG(no_prune),
     .commands = "tune",
     .help = "simulate every candidate that passes the checks (no\n"
             "branch-and-bound; same answer, slower)"},
    /* balance data (docs/balance.md) */
    {.name = "samples",
     STRING(samples),
     .metavar = "FILE",
     .commands = BALANCE_DATA " " EST " tune",
     .help = "the global batch: one sample per line, its document\n"
             "lengths (512,2048,128); required",
     .doc = "A length is a whole number from 1 to 10⁹; an error names the line and the column. "
            "`estimate`: the step time with these uneven micro-batches, without and with the "
            "data reordering; `tune`: every candidate's step with them, reordered "
            "(docs/balance.md)."},
    {.name = "synthetic-samples",
     STRING(synthetic_samples),
     .metavar = "SPEC",
     .commands = EST " tune",
     .help = "instead of --samples: gbs seeded samples of seq tokens,\n"
             "documents of lognormal lengths packed in order:\n"
             "lognormal:MU,SIGMA[,seed:N]",
     .doc = "A document is round(exp(MU + SIGMA·z)) tokens, z standard normal; reproducible on "
            "every platform (xoshiro256**); docs/balance.md."},
    {.name = "expert-load",
     STRING(expert_load),
     .metavar = "FILE",
     .commands = EST " tune",
     .help = "routing trace of the MoE layers (the formats of balance\n"
             "experts --load): the step time with these expert loads,\n"
             "at the identity and at the balanced placement",
     .doc = "`-` reads standard input. The trace's experts must be the model's, its layers at "
            "most the model's MoE layers; docs/balance.md."},
    {.name = "dp",
     .aliases = {"data-parallel-size"},
     INT(dp, 1, 1 << 24),
     .metavar = "D",
     .commands = BALANCE_DATA,
     .help = "data-parallel ranks (replicas of the pipeline); required"},
    {.name = "cost",
     STRING(sample_cost),
     .metavar = "a=A,c=C,d=D",
     .def = "with `--model`: from the model; else required",
     .commands = BALANCE_DATA,
     .help = "a sample's predicted time a·Σℓ² + c·Σℓ + d over its\n"
             "document lengths ℓ",
     .doc = "With `--model` (and `--hardware`) the keys given replace the model's."},
    {.name = "max-evals",
     INT(max_evals, 1, 1LL << 40),
     .metavar = "N",
     .def = "3·10⁵ / (1 + actions / 50): about 0.3 s; tune: 200",
     .commands = BALANCE_DATA " " EST " tune",
     .help = "simulations the search may run (its time: a few us each)",
     .doc = "`estimate` and `tune`: the data reordering's, per estimate or candidate "
            "(docs/balance.md)."},

    /* balance experts (docs/balance.md) */
    {.name = "load",
     STRING(load),
     .metavar = "FILE",
     .commands = BALANCE_EXPERTS,
     .help = "routing trace: CSV step,layer,expert,tokens (with that\n"
             "header) or one line of per-expert tokens per MoE layer",
     .doc = "`-` reads standard input. Bad input exits 2 naming the line and column."},
    {.name = "synthetic-experts",
     STRING(synthetic_experts),
     .metavar = "SPEC",
     .commands = BALANCE_EXPERTS " " EST " tune",
     .help = "instead of --load: a seeded trace for --model's MoE layers,\n"
             "zipf:S[,drift:X][,seed:N][,steps:T][,tokens:K]",
     .doc = "Reproducible on every platform (xoshiro256**); docs/balance.md."},
    {.name = "devices",
     INT(devices, 1, 1 << 20),
     .metavar = "D",
     .def = "required",
     .commands = BALANCE_EXPERTS,
     .help = "expert-parallel devices of a MoE layer"},
    {.name = "nodes",
     INT(nodes, 1, 1 << 20),
     .metavar = "N",
     .def = "1",
     .commands = BALANCE_EXPERTS,
     .help = "nodes the devices are on, the same count on each (default 1)"},
    {.name = "capacity",
     INT(capacity, 1, PS_MAX_EXPERTS),
     .metavar = "K",
     .def = "experts / devices",
     .commands = BALANCE_EXPERTS,
     .help = "experts a device holds (default experts / devices)"},
    {.name = "theta",
     DECIMAL(theta, 0, 0.999999),
     .metavar = "X",
     .def = "0.9",
     .commands = BALANCE_EXPERTS " " EST " tune",
     .help = "EMA factor of the load prediction (default 0.9)",
     .doc = "P(t+1) = X·P(t) + (1−X)·load(t), P(1) = load(0); docs/balance.md."},
    {.name = "from",
     STRING(from_placement),
     .metavar = "FILE",
     .commands = BALANCE_EXPERTS,
     .help = "the current placement (one line of devices per layer, as the\n"
             "text output prints it): migrate a layer only when it pays",
     .doc = "Needs `--model` and `--hardware`: a layer moves when `--horizon` steps of its gain "
            "exceed the migration time."},
    {.name = "horizon",
     INT(horizon, 1, 1 << 30),
     .metavar = "H",
     .def = "50",
     .commands = BALANCE_EXPERTS,
     .help = "steps a new placement stays: the gain counts H times\n"
             "(default 50)"},

};
const size_t cli_option_count = sizeof cli_options / sizeof cli_options[0];
_Static_assert(sizeof cli_options / sizeof cli_options[0] <= CLI_MAX_OPTIONS,
               "raise CLI_MAX_OPTIONS (cli.h)");

int cli_takes(const cli_command *cmd, const cli_option *opt)
{
    if (!strcmp(opt->commands, "*"))
        return 1;
    if (cmd->subcommands) /* its subcommands take the options, by both words */
        return 0;
    size_t n = strlen(cmd->name);
    for (const char *p = opt->commands; (p = strstr(p, cmd->name)); p += n)
        if ((p == opt->commands || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
            return 1;
    return 0;
}
