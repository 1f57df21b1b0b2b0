/* simulate_cmd.c: `ekya simulate`: one scheduler over the profiles, accuracy report. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "ekya/cli.h"
#include "ekya/sim.h"

typedef struct {
    const char *profiles, *inference, *scheduler, *decisions;
    ekya_params prm;
    ekya_acc_unit unit;
    int json;
} sim_opts;

static const char usage[] =
    "usage: ekya simulate --profiles FILE --inference-profile FILE --gpus G --window T\n"
    "         --scheduler thief|noretrain|fixedres|uniform:CONFIG:EPOCHS:SHARE|"
    "fixedconfig:CONFIG:EPOCHS\n"
    "         [--delta D|FG] [--rmax R] [--sample S] [--no-carry] [--json] [--decisions FILE]\n"
    "         [--accuracy-unit fraction|percent]\n"
    "  Profile accuracies: start_pct,end_pct,pred_end_pct percent 0..100, start_acc,end_acc,\n"
    "  pred_end_acc fractions 0..1; --accuracy-unit reads them in that unit whatever the names.\n";

static int parse(int argc, char **argv, sim_opts *o)
{
    static const struct option longs[] = {
        {"profiles", required_argument, 0, 'p'}, {"inference-profile", required_argument, 0, 'i'},
        {"gpus", required_argument, 0, 'g'},     {"scheduler", required_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},           {"decisions", required_argument, 0, 'D'},
        {"no-carry", no_argument, 0, 'n'},       {"help", no_argument, 0, 'h'},
        {"accuracy-unit", required_argument, 0, 'U'},
        EKYA_CLI_PARAM_OPTIONS,                  {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    ekya_cli_params_default(&o->prm);
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'p': o->profiles = optarg; break;
        case 'i': o->inference = optarg; break;
        case 's': o->scheduler = optarg; break;
        case 'D': o->decisions = optarg; break;
        case 'j': o->json = 1; break;
        case 'n': o->prm.no_carry = 1; break;
        case 'g': bad = ekya_cli_number("--gpus", optarg, 0, &o->prm.gpus); break;
        case 'U': bad = ekya_cli_acc_unit(optarg, &o->unit); break;
        case 'h': fputs(usage, stdout); return 1;
        default:
            if ((bad = ekya_cli_param(ch, optarg, &o->prm)) <= 0)
                break;
            fprintf(stderr, "ekya simulate: unknown or incomplete option '%s'\n",
                    argv[optind - 1]);
            return -1;
        }
        if (bad)
            return -1;
    }
    const char *missing = !o->profiles ? "--profiles" : !o->inference ? "--inference-profile"
                        : !o->prm.gpus ? "--gpus" : !o->prm.length ? "--window"
                        : !o->scheduler ? "--scheduler" : NULL;
    if (missing || optind < argc) {
        fprintf(stderr, "ekya simulate: %s%s (see ekya simulate --help)\n",
                missing ? "missing " : "unexpected argument ", missing ? missing : argv[optind]);
        return -1;
    }
    return 0;
}

static void print_text(const ekya_profiles *p, const char *sched, const ekya_sim_result *r)
{
    printf("scheduler %s: mean accuracy %.4f (%.2f%%)\n", sched, r->mean, 100 * r->mean);
    for (int s = 0; s < p->nstreams; s++)
        printf("  stream %-12s %.4f\n", p->streams[s], r->stream_mean[s]);
    for (int w = 0; w < p->nwindows; w++)
        printf("  window %-12d %.4f\n", p->window_ids[w], r->window_mean[w]);
    printf("scheduler time: %.6f s over %d calls (max %.6f s per call), %d retrainings "
           "completed\n", r->sched.total_seconds, r->sched.calls, r->sched.max_seconds,
           r->completions);
}

static void print_json(const ekya_profiles *p, const char *sched, const ekya_sim_result *r)
{
    json_t *streams = json_object(), *windows = json_array();
    for (int s = 0; s < p->nstreams; s++)
        json_object_set_new(streams, p->streams[s], json_real(r->stream_mean[s]));
    for (int w = 0; w < p->nwindows; w++)
        json_array_append_new(windows, json_real(r->window_mean[w]));
    json_t *o = json_pack("{s:s, s:f, s:o, s:o, s:f, s:i, s:f, s:i}", "scheduler", sched,
                          "mean_accuracy", r->mean, "streams", streams, "windows", windows,
                          "scheduler_seconds", r->sched.total_seconds, "scheduler_calls",
                          r->sched.calls, "scheduler_max_seconds", r->sched.max_seconds,
                          "completions", r->completions);
    json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    putchar('\n');
    json_decref(o);
}

static int run(const sim_opts *o, const ekya_profiles *p, const ekya_infer_profile *inf)
{
    char err[512];
    ekya_scheduler sched;
    if (ekya_scheduler_create(o->scheduler, p, &sched, err, sizeof err) != 0) {
        fprintf(stderr, "ekya: %s\n", err);
        return 2;
    }
    FILE *dec = NULL;
    if (o->decisions && !(dec = fopen(o->decisions, "w"))) {
        fprintf(stderr, "ekya: %s: cannot open for writing\n", o->decisions);
        ekya_scheduler_destroy(&sched);
        return 1;
    }
    ekya_sim_result r;
    int rc = ekya_simulate(p, inf, &o->prm, &sched, dec, NULL, &r, err, sizeof err);
    if (dec && fclose(dec) != 0 && rc == 0) {
        snprintf(err, sizeof err, "%s: write failed", o->decisions);
        rc = -1;
    }
    ekya_scheduler_destroy(&sched);
    if (rc != 0) {
        fprintf(stderr, "ekya: %s\n", err);
        return 1;
    }
    (o->json ? print_json : print_text)(p, o->scheduler, &r);
    ekya_sim_result_free(&r);
    return 0;
}

int ekya_cmd_simulate(int argc, char **argv)
{
    sim_opts o;
    int prc = parse(argc, argv, &o);
    if (prc != 0)
        return prc > 0 ? 0 : 2;
    ekya_profiles p;
    ekya_infer_profile inf;
    if (ekya_cli_load_unit(o.profiles, o.unit, o.inference, &p, &inf) != 0)
        return 1;
    int rc = run(&o, &p, &inf);
    if (rc == 0)
        ekya_cli_note_sampling(&o.prm);
    ekya_profiles_free(&p);
    ekya_infer_free(&inf);
    return rc;
}
