/* plot.c: `cilantro plot`: each policy's social welfare, egalitarian welfare and NJC
 * fairness over time, from simulated runs (--env, --policies) or from the logs of live
 * runs (--live, `cilantro serve --log`), written as a table (DIR/series.tsv, one block
 * per series) and drawn with gnuplot (DIR/welfare.png, DIR/egalitarian.png,
 * DIR/fairness.png). Curves are a moving average over 5 rounds, which keeps the policies
 * apart on one plot without hiding trends. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define SMOOTH 5
#define MAX_SERIES 32

/* One line of the plots: per round its time (seconds) and the three metrics (NAN where
 * a live round had no reward to score). */
typedef struct {
    char name[96];
    size_t n;
    double *t, *m[3];
} series;

static void series_free(series *s)
{
    free(s->t);
    for (int k = 0; k < 3; k++)
        free(s->m[k]);
}

static int series_alloc(series *s, size_t n)
{
    s->n = n;
    s->t = calloc(n ? n : 1, sizeof *s->t);
    for (int k = 0; k < 3; k++)
        s->m[k] = calloc(n ? n : 1, sizeof *s->m[k]);
    return s->t && s->m[0] && s->m[1] && s->m[2] ? 0 : -1;
}

/* The mean of the finite values among the SMOOTH rounds ending at i (NAN: none). */
static double smoothed(const double *v, size_t i)
{
    double sum = 0;
    int n = 0;
    for (size_t q = i + 1 >= SMOOTH ? i + 1 - SMOOTH : 0; q <= i; q++)
        if (isfinite(v[q]))
            sum += v[q], n++;
    return n ? sum / n : NAN;
}

/* series.tsv: a block per series ("# name", then time in the plot's unit and the three
 * smoothed metrics per round), blocks two blank lines apart (gnuplot's `index`). */
static int write_table(const char *path, const series *s, int ns, double unit_s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (int k = 0; k < ns; k++) {
        fprintf(f, "# %s\ttime\tsocial_welfare\tegalitarian_welfare\tnjc_fairness\n", s[k].name);
        for (size_t i = 0; i < s[k].n; i++) {
            fprintf(f, "%.5f", s[k].t[i] / unit_s);
            for (int m = 0; m < 3; m++)
                fprintf(f, "\t%.5f", smoothed(s[k].m[m], i));
            fprintf(f, "\n");
        }
        fprintf(f, "\n\n");
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* Sixteen colours far apart (and a dash pattern per group of eight), so that even every
 * simulator policy on one plot can be told apart. */
static const char *const colours[16] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#000000", "#bcbd22", "#7f7f7f", "#aec7e8", "#ff9896", "#98df8a", "#c5b0d5", "#ffbb78"};

static int draw(const char *dir, const series *s, int ns, const char *xlabel)
{
    FILE *g = popen("gnuplot 2>&1", "w");
    if (!g)
        return -1;
    static const char *const names[3] = {"welfare", "egalitarian", "fairness"};
    static const char *const titles[3] = {"social welfare", "egalitarian welfare",
                                          "NJC fairness"};
    /* offsets: a series at 1.0 (or 0) sits inside the frame, not on it */
    /* the key below the plot, in rows: the plot keeps the picture's width */
    fprintf(g, "set terminal pngcairo size 900,520\nset datafile separator '\\t'\n"
               "set datafile missing 'nan'\nset key below maxrows 3\nset xlabel '%s'\n"
               "set autoscale xfix\nset grid\nset offsets 0, 0, graph 0.06, graph 0.06\n",
            xlabel);
    for (int m = 0; m < 3; m++) {
        fprintf(g, "set output '%s/%s.png'\nset ylabel '%s'\nplot ", dir, names[m], titles[m]);
        for (int k = 0; k < ns; k++)
            fprintf(g, "%s'%s/series.tsv' index %d using 1:%d with lines lw 2 dt %d "
                       "lc rgb '%s' title '%s'",
                    k ? ", " : "", dir, k, 2 + m, 1 + (k / 16) % 5, colours[k % 16], s[k].name);
        fprintf(g, "\n");
    }
    fprintf(g, "set output\n");
    return pclose(g) == 0 ? 0 : -1;
}

/* ---- simulated runs ---- */
static int from_sim(const cli_opts *o, series *s, int *ns)
{
    cil_policy_kind pols[CIL_POL_COUNT];
    int np = cli_policy_list("plot", o->policies, pols);
    if (np < 0)
        return 2;
    cil_env *env = cli_load_env("plot", o->env);
    if (!env)
        return 1;
    int rc = 0;
    for (*ns = 0; rc == 0 && *ns < np; (*ns)++) {
        cil_sim_result res;
        if (cli_run("plot", env, pols[*ns], o, &res) != 0) {
            rc = 1;
            break;
        }
        series *x = &s[*ns];
        snprintf(x->name, sizeof x->name, "%s", cil_policy_name(pols[*ns]));
        rc = series_alloc(x, res.rounds) == 0 ? 0 : 1;
        for (size_t i = 0; rc == 0 && i < res.rounds; i++) {
            x->t[i] = (double)(i + 1) * env->round_s;
            x->m[0][i] = res.series[i].social_welfare;
            x->m[1][i] = res.series[i].egalitarian_welfare;
            x->m[2][i] = res.series[i].njc_fairness;
        }
        cil_sim_result_free(&res);
    }
    cil_env_free(env);
    return rc;
}

/* ---- live runs ---- */
/* A metric of a log line: a number, or null (NAN); -1 when missing or of another type. */
static int metric(json_t *o, const char *k, double *v)
{
    json_t *x = json_object_get(o, k);
    *v = json_is_number(x) ? json_number_value(x) : NAN;
    return json_is_number(x) || json_is_null(x) ? 0 : -1;
}

/* One round of a log into x at index i; -1 with a message naming path:line. */
static int log_round(json_t *o, series *x, size_t i, const char *path, size_t line)
{
    static const char *const keys[3] = {"social_welfare", "egalitarian_welfare",
                                        "njc_fairness"};
    json_t *t = json_object_get(o, "t");
    const char *pol = json_string_value(json_object_get(o, "policy"));
    int bad = !json_is_number(t) || json_number_value(t) < 0 || !pol;
    for (int m = 0; !bad && m < 3; m++)
        bad = metric(o, keys[m], &x->m[m][i]) != 0 ||
              (isfinite(x->m[m][i]) && (x->m[m][i] < 0 || x->m[m][i] > 1));
    if (bad) {
        fprintf(stderr, "cilantro plot: %s:%zu: not a round of `cilantro serve --log` (needs "
                        "\"t\" in seconds >= 0, \"policy\", and the three metrics in 0..1 or null)\n",
                path, line);
        return -1;
    }
    x->t[i] = json_number_value(t);
    if (i == 0)
        snprintf(x->name, sizeof x->name, "%s (live)", pol);
    return 0;
}

static size_t count_lines(FILE *f)
{
    size_t n = 0;
    for (int ch; (ch = fgetc(f)) != EOF;)
        n += ch == '\n';
    rewind(f);
    return n;
}

static int read_log(const char *path, series *x)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cilantro plot: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    int rc = series_alloc(x, count_lines(f)) == 0 ? 0 : 1;
    char buf[65536];
    size_t line = 0, i = 0;
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        line++;
        json_error_t je;
        json_t *o = json_loads(buf, 0, &je);
        rc = o && log_round(o, x, i++, path, line) == 0 ? 0 : 1;
        if (!o)
            fprintf(stderr, "cilantro plot: %s:%zu: %s\n", path, line, je.text);
        json_decref(o);
    }
    x->n = i;
    fclose(f);
    if (rc == 0 && i == 0) {
        fprintf(stderr, "cilantro plot: %s: no rounds\n", path);
        rc = 1;
    }
    return rc;
}

static int from_logs(const char *list, series *s, int *ns)
{
    char *copy = strdup(list), *save = NULL;
    int rc = copy ? 0 : 1;
    *ns = 0;
    for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; rc == 0 && p;
         p = strtok_r(NULL, ",", &save)) {
        if (*ns == MAX_SERIES) {
            fprintf(stderr, "cilantro plot: at most %d logs\n", MAX_SERIES);
            rc = 2;
            break;
        }
        rc = read_log(p, &s[(*ns)++]);
    }
    free(copy);
    return rc;
}

int cmd_plot(int argc, char **argv)
{
    int live = 0;
    for (int i = 1; i < argc; i++)
        live |= !strcmp(argv[i], "--live");
    cli_opts o;
    unsigned allowed = live ? OPT_LIVE | OPT_OUT
                            : OPT_ENV | OPT_POLICIES | OPT_OUT | OPT_HOURS | OPT_SEED;
    if (cli_parse("plot", argc - 1, argv + 1, allowed, &o) != 0)
        return 2;
    if (mkdir(o.out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "cilantro plot: cannot create %s: %s\n", o.out, strerror(errno));
        return 1;
    }
    static series s[MAX_SERIES > CIL_POL_COUNT ? MAX_SERIES : CIL_POL_COUNT];
    int ns = 0;
    int rc = live ? from_logs(o.live, s, &ns) : from_sim(&o, s, &ns);
    double span = 0;
    for (int k = 0; rc == 0 && k < ns; k++)
        span = fmax(span, s[k].n ? s[k].t[s[k].n - 1] : 0);
    int minutes = span < 2 * 3600.0; /* a 30-minute live run reads better in minutes */
    char path[4096];
    snprintf(path, sizeof path, "%s/series.tsv", o.out);
    if (rc == 0 && write_table(path, s, ns, minutes ? 60 : 3600) != 0) {
        fprintf(stderr, "cilantro plot: cannot write %s\n", path);
        rc = 1;
    }
    if (rc == 0 && draw(o.out, s, ns, minutes ? "minutes" : "hours") != 0) {
        fprintf(stderr, "cilantro plot: gnuplot failed (is gnuplot installed?)\n");
        rc = 1;
    }
    if (rc == 0)
        printf("wrote %s/series.tsv, %s/welfare.png, %s/egalitarian.png, %s/fairness.png\n",
               o.out, o.out, o.out, o.out);
    for (int k = 0; k < ns; k++)
        series_free(&s[k]);
    return rc;
}
