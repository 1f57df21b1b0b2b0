/* plot_cmd.c: `ekya plot`: every scheduler at every GPU count, a data file, a gnuplot
 * script and two figures (accuracy vs GPUs; streams above the accuracy target), each
 * as svg (in every gnuplot build) and png (pngcairo, else gd's png, when the
 * installed gnuplot has one of them). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
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

/* Distinct colours (Okabe-Ito, readable by the colour-blind; neighbours contrast) and
 * point types (filled circle, square, triangle, diamond, ...) per scheduler. */
static const char *const colours[] = {"#0072B2", "#D55E00", "#009E73", "#000000",
                                      "#E69F00", "#CC79A7", "#56B4E9", "#999999"};
static const int points[] = {7, 5, 9, 13, 11, 6, 4, 8, 12, 10};
#define NCOLOURS (int)(sizeof colours / sizeof *colours)
#define NPOINTS (int)(sizeof points / sizeof *points)

/* One series per scheduler from column col0 + 2k. Earlier series are drawn wider and
 * with bigger points, so where schedulers coincide every one still shows around the
 * ones drawn over it. */
static void plot_series(const plot_opts *o, int col0, FILE *gp)
{
    double step = o->nscheds > 1 ? fmin(1.2, 3.75 / (o->nscheds - 1)) : 0;
    fprintf(gp, "plot ");
    for (int k = 0; k < o->nscheds; k++) {
        int rest = o->nscheds - 1 - k;
        fprintf(gp, "%s'results.dat' using 1:%d with linespoints lc rgb '%s' pt %d "
                    "ps %.2f lw %.2f dt %d title '%s'",
                k ? ", \\\n     " : "", col0 + 2 * k, colours[k % NCOLOURS],
                points[k % NPOINTS], 1.0 + 0.3 * rest, 1.25 + step * rest,
                1 + (k / NCOLOURS) % 5, o->scheds[k]);
    }
    fputc('\n', gp);
}

#define FIG_SIZE "size 800,600 noenhanced"
#define FIG_FONT "font 'sans,13' background '#ffffff'"

/* One figure: the plot to name.svg, then the same again to name.png when png_term. */
static void figure(const plot_opts *o, const char *name, int col0, const char *png_term,
                   FILE *gp)
{
    fprintf(gp, "set terminal svg " FIG_SIZE " " FIG_FONT "\nset output '%s.svg'\n", name);
    plot_series(o, col0, gp);
    fprintf(gp, "unset output\n");
    if (png_term)
        fprintf(gp, "set terminal %s\nset output '%s.png'\nreplot\nunset output\n", png_term,
                name);
}

static void write_script(const plot_opts *o, int nstreams, const char *png_term, FILE *gp)
{
    double gmin = o->gpus[0], gmax = o->gpus[0];
    for (int g = 1; g < o->ngpus; g++) {
        gmin = o->gpus[g] < gmin ? o->gpus[g] : gmin;
        gmax = o->gpus[g] > gmax ? o->gpus[g] : gmax;
    }
    /* x: log2, so 0.5, 1, 2 are as far apart as 4 and 8; ticks at the
     * given G only. y: the data's range plus a margin, so no line lies on the border. */
    fprintf(gp, "# ekya plot: results.dat -> accuracy_vs_gpus.{svg,png}, "
                "streams_above_target.{svg,png}\n"
                "set logscale x 2\nset xrange [%g:%g]\nset xlabel 'GPUs (log scale)'\n"
                "set xtics (", gmin / 1.25, gmax * 1.25);
    for (int g = 0; g < o->ngpus; g++)
        fprintf(gp, "%s'%g' %.17g", g ? ", " : "", o->gpus[g], o->gpus[g]);
    fprintf(gp, ") nomirror\nunset mxtics\nset ytics nomirror\nset border 3 back\n"
                "set grid xtics ytics back lc rgb '#b8b8b8' lw 1 dt 2\n"
                "set key outside below center horizontal Left reverse maxrows 3 samplen 3 "
                "spacing 1.1 width 1 font ',11'\nset tmargin 1.5\nset rmargin 3\nset clip two\n"
                "set autoscale yfix\nset offsets 0, 0, graph 0.08, graph 0.08\n"
                "set format y '%%.2f'\nset ylabel 'mean inference accuracy'\n");
    figure(o, "accuracy_vs_gpus", 2, png_term, gp);
    fprintf(gp, "\nset offsets 0, 0, 0, 0\n"
                "set autoscale y\nset yrange [-0.04 * %d - 0.2:%d * 1.04 + 0.2]\n"
                "set format y '%%g'\nset ytics %s\n"
                "set ylabel 'streams with accuracy >= %.2f (of %d)'\n",
            nstreams, nstreams, nstreams <= 12 ? "1" : "autofreq", o->target, nstreams);
    figure(o, "streams_above_target", 3, png_term, gp);
}

/* The png terminal of the installed gnuplot: "pngcairo ..." (antialiased), else
 * gd's "png ...", else NULL. gnuplot lists its terminals on stderr. */
static const char *png_terminal(void)
{
    FILE *f = popen("gnuplot -e 'set terminal' 2>&1 </dev/null", "r");
    if (!f)
        return NULL;
    char line[512], name[64];
    int cairo = 0, gd = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, " %63s", name) == 1) {
            cairo |= strcmp(name, "pngcairo") == 0;
            gd |= strcmp(name, "png") == 0;
        }
    pclose(f);
    return cairo ? "pngcairo " FIG_SIZE " " FIG_FONT
         : gd    ? "png " FIG_SIZE " medium background '#ffffff'"
                 : NULL;
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
    const char *png = png_terminal();
    write_script(o, p->nstreams, png, gp);
    if (fclose(gp) != 0)
        return 1;
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plot.gp", o->out);
    if (system(cmd) != 0) {
        fprintf(stderr, "ekya: gnuplot failed on %s (results.dat is still there)\n", path);
        return 1;
    }
    const char *ext = png ? "{svg,png}" : "svg";
    printf("wrote %s/accuracy_vs_gpus.%s and %s/streams_above_target.%s\n", o->out, ext, o->out,
           ext);
    if (!png)
        fprintf(stderr, "ekya: note: this gnuplot has no png terminal (pngcairo or png); "
                "wrote svg only\n");
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
