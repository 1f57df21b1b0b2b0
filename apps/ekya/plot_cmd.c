/* plot_cmd.c: `ekya plot`: every scheduler at every GPU count, a data file, a gnuplot
 * script and two svg figures (accuracy vs GPUs; streams above the accuracy target).
 * svg because it is in every gnuplot build, gnuplot-nox included. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ekya/cli.h"
#include "ekya/sim.h"

#define MAX_LIST 32

typedef struct {
    const char *profiles, *inference, *out;
    char gpus_arg[512], sched_arg[1024];
    double gpus[MAX_LIST];
    int ngpus;
    char *scheds[MAX_LIST];
    int nscheds;
    double target;
    ekya_params prm;
    ekya_acc_unit unit;
} plot_opts;

static const char usage[] =
    "usage: ekya plot --profiles F --inference-profile F --window T --gpus 1,2,4,8 --out DIR\n"
    "         [--target ACC] [--schedulers S1,S2,..] [--delta D|FG] [--rmax R] [--no-carry]\n"
    "         [--sample S] [--accuracy-unit fraction|percent]\n";

static int parse_gpus(plot_opts *o, const char *arg)
{
    snprintf(o->gpus_arg, sizeof o->gpus_arg, "%s", arg);
    o->ngpus = 0;
    for (char *save, *t = strtok_r(o->gpus_arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->ngpus == MAX_LIST) {
            fprintf(stderr, "ekya plot: --gpus: at most %d values\n", MAX_LIST);
            return -1;
        }
        if (ekya_cli_number("--gpus", t, 0, &o->gpus[o->ngpus++]) != 0)
            return -1;
    }
    return 0;
}

static void split_scheds(plot_opts *o)
{
    o->nscheds = 0;
    for (char *save, *t = strtok_r(o->sched_arg, ",", &save); t && o->nscheds < MAX_LIST;
         t = strtok_r(NULL, ",", &save))
        o->scheds[o->nscheds++] = t;
}

static int parse(int argc, char **argv, plot_opts *o)
{
    static const struct option longs[] = {
        {"profiles", required_argument, 0, 'p'}, {"inference-profile", required_argument, 0, 'i'},
        {"gpus", required_argument, 0, 'g'},     {"out", required_argument, 0, 'o'},
        {"target", required_argument, 0, 't'},   {"schedulers", required_argument, 0, 's'},
        {"no-carry", no_argument, 0, 'n'},       {"help", no_argument, 0, 'h'},
        {"accuracy-unit", required_argument, 0, 'U'},
        EKYA_CLI_PARAM_OPTIONS,                  {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    ekya_cli_params_default(&o->prm);
    o->target = 0.75;
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'p': o->profiles = optarg; break;
        case 'i': o->inference = optarg; break;
        case 'o': o->out = optarg; break;
        case 'n': o->prm.no_carry = 1; break;
        case 's': snprintf(o->sched_arg, sizeof o->sched_arg, "%s", optarg); break;
        case 'g': bad = parse_gpus(o, optarg); break;
        case 't': bad = ekya_cli_number("--target", optarg, 1, &o->target); break;
        case 'U': bad = ekya_cli_acc_unit(optarg, &o->unit); break;
        case 'h': fputs(usage, stdout); return 1;
        default:
            if ((bad = ekya_cli_param(ch, optarg, &o->prm)) <= 0)
                break;
            fprintf(stderr, "ekya plot: unknown or incomplete option '%s'\n", argv[optind - 1]);
            return -1;
        }
        if (bad)
            return -1;
    }
    if (o->target > 1)
        o->target /= 100; /* given in percent, like the profiles */
    const char *missing = !o->profiles ? "--profiles" : !o->inference ? "--inference-profile"
                        : !o->ngpus ? "--gpus" : !o->prm.length ? "--window"
                        : !o->out ? "--out" : NULL;
    if (missing || optind < argc) {
        fprintf(stderr, "ekya plot: %s%s (see ekya plot --help)\n",
                missing ? "missing " : "unexpected argument ", missing ? missing : argv[optind]);
        return -1;
    }
    return 0;
}

/* The default set: thief, the two Ekya ablations and the uniform baseline with the
 * profile's first configuration, half of each stream's GPUs for inference. */
static void default_scheds(plot_opts *o, const ekya_profiles *p)
{
    if (o->sched_arg[0] == '\0')
        snprintf(o->sched_arg, sizeof o->sched_arg, "thief,fixedres,noretrain,uniform:%s:%d:0.5",
                 p->configs[0].name, p->configs[0].epochs);
    split_scheds(o);
}

/* Runs every (G, scheduler); writes DIR/results.dat, one row per G. */
static int simulate_all(plot_opts *o, const ekya_profiles *p, const ekya_infer_profile *inf,
                        FILE *dat)
{
    char err[512];
    fprintf(dat, "# gpus");
    for (int k = 0; k < o->nscheds; k++)
        fprintf(dat, " \"%s\" \"%s above\"", o->scheds[k], o->scheds[k]);
    fputc('\n', dat);
    for (int g = 0; g < o->ngpus; g++) {
        fprintf(dat, "%g", o->gpus[g]);
        for (int k = 0; k < o->nscheds; k++) {
            ekya_scheduler sched;
            ekya_sim_result r;
            ekya_params prm = o->prm;
            prm.gpus = o->gpus[g];
            if (ekya_scheduler_create(o->scheds[k], p, &sched, err, sizeof err) != 0 ||
                ekya_simulate(p, inf, &prm, &sched, NULL, NULL, &r, err, sizeof err) != 0) {
                ekya_scheduler_destroy(&sched);
                fprintf(stderr, "ekya: %s\n", err);
                return -1;
            }
            int above = 0;
            for (int s = 0; s < p->nstreams; s++)
                above += r.stream_mean[s] >= o->target;
            fprintf(dat, " %.6f %d", r.mean, above);
            printf("gpus %g %-28s mean accuracy %.4f, %d/%d streams >= %.2f\n", o->gpus[g],
                   o->scheds[k], r.mean, above, p->nstreams, o->target);
            ekya_sim_result_free(&r);
            ekya_scheduler_destroy(&sched);
        }
        fputc('\n', dat);
    }
    return 0;
}

static void write_script(const plot_opts *o, int nstreams, FILE *gp)
{
    fprintf(gp, "set terminal svg size 640,480 noenhanced\nset key outside below\nset grid\n"
                "set xlabel 'GPUs'\nset xtics (");
    for (int g = 0; g < o->ngpus; g++)
        fprintf(gp, "%s%g", g ? ", " : "", o->gpus[g]);
    fprintf(gp, ")\nset output 'accuracy_vs_gpus.svg'\nset ylabel 'mean inference accuracy'\n"
                "set yrange [*:*]\nplot ");
    for (int k = 0; k < o->nscheds; k++)
        fprintf(gp, "%s'results.dat' using 1:%d with linespoints title '%s'",
                k ? ", \\\n     " : "", 2 + 2 * k, o->scheds[k]);
    fprintf(gp, "\nset output 'streams_above_target.svg'\n"
                "set ylabel 'streams with accuracy >= %.2f'\nset yrange [0:%d]\nplot ", o->target,
            nstreams);
    for (int k = 0; k < o->nscheds; k++)
        fprintf(gp, "%s'results.dat' using 1:%d with linespoints title '%s'",
                k ? ", \\\n     " : "", 3 + 2 * k, o->scheds[k]);
    fputc('\n', gp);
}

static FILE *open_in(const char *dir, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "ekya: %s: cannot open for writing: %s\n", path, strerror(errno));
    return f;
}

static int run(plot_opts *o, const ekya_profiles *p, const ekya_infer_profile *inf)
{
    char path[4096], cmd[4200];
    if (strchr(o->out, '\'')) { /* the directory is quoted for the shell below */
        fprintf(stderr, "ekya: --out: '%s' must not contain a single quote\n", o->out);
        return 2;
    }
    if (mkdir(o->out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "ekya: %s: cannot create directory: %s\n", o->out, strerror(errno));
        return 1;
    }
    default_scheds(o, p);
    FILE *dat = open_in(o->out, "results.dat", path, sizeof path);
    if (!dat)
        return 1;
    int rc = simulate_all(o, p, inf, dat);
    if (fclose(dat) != 0 || rc != 0)
        return 1;
    FILE *gp = open_in(o->out, "plot.gp", path, sizeof path);
    if (!gp)
        return 1;
    write_script(o, p->nstreams, gp);
    if (fclose(gp) != 0)
        return 1;
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plot.gp", o->out);
    if (system(cmd) != 0) {
        fprintf(stderr, "ekya: gnuplot failed on %s (results.dat is still there)\n", path);
        return 1;
    }
    printf("wrote %s/accuracy_vs_gpus.svg and %s/streams_above_target.svg\n", o->out, o->out);
    return 0;
}

int ekya_cmd_plot(int argc, char **argv)
{
    plot_opts *o = calloc(1, sizeof *o);
    if (!o)
        return 1;
    int prc = parse(argc, argv, o), rc = prc > 0 ? 0 : 2;
    ekya_profiles p;
    ekya_infer_profile inf;
    if (prc == 0) {
        rc = 1;
        if (ekya_cli_load_unit(o->profiles, o->unit, o->inference, &p, &inf) == 0) {
            rc = run(o, &p, &inf);
            if (rc == 0)
                ekya_cli_note_sampling(&o->prm);
            ekya_profiles_free(&p);
            ekya_infer_free(&inf);
        }
    }
    free(o);
    return rc;
}
