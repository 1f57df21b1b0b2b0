/* micro_policy.c: the microservice allocation policies (Cilantro UCB, EvoAlg,
 * epsilon-greedy, Resource-Fair). See cilantro/micro.h and docs/cilantro_micro.md. */
#include "cilantro/micro.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cilantro/env.h"
#include "cilantro/gp.h"

#define N CIL_MICRO_NSVC
#define SPARE (CIL_MICRO_R - N * CIL_MICRO_MIN) /* CPUs above the minimums */

/* Policy knobs (docs/cilantro_micro.md). */
#define UCB_BETA 2.5        /* UCB = mean + UCB_BETA * sd */
#define GP_CAP 240          /* GP data cap: the newest points */
#define GP_REFIT_EVERY 10   /* ML-II hyperparameter search every so many rounds */
#define OPT_DEPTH 1         /* optimizer: mutations away from observed allocations */
#define OPT_ITERS 400       /* evolutionary optimizer: children per round */
#define ELITES 16           /* best distinct observed allocations kept */
#define EPSILON 0.2         /* epsilon-greedy: exploration probability */
#define CPU_SCALE 8.0       /* GP input: a_j / CPU_SCALE (so the fair share is 1) */
#define LOAD_SCALE 10.0     /* GP input: LOAD_SCALE * (load / first load - 1) */

/* One distinct observed allocation with the running mean of its rewards. */
typedef struct {
    long a[N];
    double reward; /* mean of -P99 observed with this allocation */
    size_t count;
} elite;

struct cil_micro_agent {
    cil_micro_policy policy;
    cil_rng rng;
    size_t rounds;      /* observations so far */
    double load_ref;    /* first observed load: the GP's load unit */
    elite elites[ELITES];
    size_t nelites;
    cil_gp *gp;         /* UCB only */
};

static const char *const POLICY_NAMES[CIL_MICRO_NPOLICIES] = {
    "ucb", "evoalg", "egreedy", "resource-fair"};

int cil_micro_policy_parse(const char *name, cil_micro_policy *p)
{
    if (!name || !p)
        return -1;
    for (int i = 0; i < CIL_MICRO_NPOLICIES; i++)
        if (strcmp(name, POLICY_NAMES[i]) == 0) {
            *p = (cil_micro_policy)i;
            return 0;
        }
    if (strcmp(name, "cilantro") == 0) {
        *p = CIL_MICRO_UCB;
        return 0;
    }
    return -1;
}

const char *cil_micro_policy_name(cil_micro_policy p)
{
    return (int)p >= 0 && p < CIL_MICRO_NPOLICIES ? POLICY_NAMES[p] : NULL;
}

cil_micro_agent *cil_micro_agent_new(cil_micro_policy p, uint64_t seed)
{
    if ((int)p < 0 || p >= CIL_MICRO_NPOLICIES)
        return NULL;
    cil_micro_agent *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->policy = p;
    cil_rng_seed(&a->rng, seed);
    if (p == CIL_MICRO_UCB) {
        a->gp = cil_gp_new(N + 1, GP_CAP, NULL, 0);
        if (!a->gp) {
            free(a);
            return NULL;
        }
    }
    return a;
}

void cil_micro_agent_free(cil_micro_agent *a)
{
    if (!a)
        return;
    cil_gp_free(a->gp);
    free(a);
}

/* ---- allocation vectors: every entry >= CIL_MICRO_MIN, sum == CIL_MICRO_R ---- */

static size_t randint(cil_rng *r, size_t n) { return (size_t)(cil_rng_next(r) % n); }

static void fair(long *a)
{
    for (size_t j = 0; j < N; j++)
        a[j] = CIL_MICRO_R / N;
}

/* Random split: the minimums plus the spare CPUs in proportion to uniform weights,
 * floored, the remainder one by one to random services. */
static void random_alloc(cil_rng *r, long *a)
{
    double w[N], sum = 0;
    for (size_t j = 0; j < N; j++)
        sum += w[j] = cil_rng_uniform(r);
    long left = SPARE;
    for (size_t j = 0; j < N; j++) {
        a[j] = CIL_MICRO_MIN + (long)floor(SPARE * w[j] / sum);
        left -= a[j] - CIL_MICRO_MIN;
    }
    for (; left > 0; left--)
        a[randint(r, N)]++;
}

/* Moves 1-4 CPUs from one random service to another, 1-3 times, never below the
 * minimum; the sum stays the same. */
static void mutate(cil_rng *r, long *a)
{
    size_t moves = 1 + randint(r, 3);
    for (size_t m = 0; m < moves; m++) {
        size_t i = randint(r, N), j = randint(r, N - 1);
        if (j >= i)
            j++;
        long room = a[i] - CIL_MICRO_MIN;
        if (room <= 0)
            continue;
        long k = 1 + (long)randint(r, (size_t)(room < 4 ? room : 4));
        a[i] -= k;
        a[j] += k;
    }
}

static int valid(const long *a)
{
    long s = 0;
    for (size_t j = 0; j < N; j++) {
        if (a[j] < CIL_MICRO_MIN)
            return 0;
        s += a[j];
    }
    return s <= CIL_MICRO_R;
}

/* ---- elites: the best distinct observed allocations ---- */

/* Records a reward for allocation a: averaged into its entry when a was seen before,
 * else added, evicting the worst entry when full and the new one is better. */
static void elites_add(cil_micro_agent *ag, const long *a, double reward)
{
    for (size_t i = 0; i < ag->nelites; i++)
        if (memcmp(ag->elites[i].a, a, sizeof ag->elites[i].a) == 0) {
            elite *e = &ag->elites[i];
            e->count++;
            e->reward += (reward - e->reward) / (double)e->count;
            return;
        }
    size_t slot = ag->nelites;
    if (ag->nelites == ELITES) {
        slot = 0;
        for (size_t i = 1; i < ELITES; i++)
            if (ag->elites[i].reward < ag->elites[slot].reward)
                slot = i;
        if (ag->elites[slot].reward >= reward)
            return;
    } else {
        ag->nelites++;
    }
    memcpy(ag->elites[slot].a, a, sizeof ag->elites[slot].a);
    ag->elites[slot].reward = reward;
    ag->elites[slot].count = 1;
}

static const elite *elites_best(const cil_micro_agent *ag)
{
    const elite *b = NULL;
    for (size_t i = 0; i < ag->nelites; i++)
        if (!b || ag->elites[i].reward > b->reward)
            b = &ag->elites[i];
    return b;
}

/* ---- the policies ---- */

/* EvoAlg: a parent from the elites by a 2-way tournament on observed reward, mutated. */
static void choose_evoalg(cil_micro_agent *ag, long *a)
{
    const elite *x = &ag->elites[randint(&ag->rng, ag->nelites)];
    const elite *y = &ag->elites[randint(&ag->rng, ag->nelites)];
    memcpy(a, (x->reward >= y->reward ? x : y)->a, N * sizeof *a);
    mutate(&ag->rng, a);
}

/* Epsilon-greedy: a random split with probability EPSILON, else the best observed. */
static void choose_egreedy(cil_micro_agent *ag, long *a)
{
    if (cil_rng_uniform(&ag->rng) < EPSILON)
        random_alloc(&ag->rng, a);
    else
        memcpy(a, elites_best(ag)->a, N * sizeof *a);
}

static void gp_input(const cil_micro_agent *ag, const long *a, double load, double *x)
{
    for (size_t j = 0; j < N; j++)
        x[j] = (double)a[j] / CPU_SCALE;
    x[N] = LOAD_SCALE * (load / ag->load_ref - 1.0);
}

/* The GP's upper confidence bound on -log P99 for allocation a at load. */
static double ucb(cil_micro_agent *ag, const long *a, double load)
{
    double x[N + 1], m, sd;
    gp_input(ag, a, load, x);
    if (cil_gp_predict(ag->gp, x, &m, &sd) != 0)
        return -INFINITY;
    return m + UCB_BETA * sd;
}

/* Cilantro: maximizes the UCB over integer allocations with an evolutionary
 * optimizer kept near the data: the parents are the elites (the best observed
 * allocations) and the equal split, each generation's children are mutations of a
 * parent picked by a 2-way tournament on UCB, and a child joins the parents (replacing
 * the worst) when its UCB is higher. A child is at most OPT_DEPTH mutations away from
 * an observed allocation: far from the data every allocation has the prior's large sd,
 * so an unbounded search would mostly pick blind jumps (see the doc). */
static void choose_ucb(cil_micro_agent *ag, double load, long *a)
{
    long pop[ELITES + 1][N];
    double fit[ELITES + 1];
    unsigned depth[ELITES + 1];
    size_t np = 0;
    for (; np < ag->nelites; np++)
        memcpy(pop[np], ag->elites[np].a, sizeof pop[np]);
    fair(pop[np++]);
    for (size_t i = 0; i < np; i++) {
        fit[i] = ucb(ag, pop[i], load);
        depth[i] = 0;
    }
    for (size_t it = 0; it < OPT_ITERS; it++) {
        size_t p = randint(&ag->rng, np), q = randint(&ag->rng, np);
        size_t w = fit[p] >= fit[q] ? p : q;
        if (depth[w] >= OPT_DEPTH)
            w = randint(&ag->rng, np);
        if (depth[w] >= OPT_DEPTH)
            continue;
        long child[N];
        memcpy(child, pop[w], sizeof child);
        mutate(&ag->rng, child);
        double f = ucb(ag, child, load);
        size_t worst = 0;
        for (size_t i = 1; i < np; i++)
            if (fit[i] < fit[worst])
                worst = i;
        if (f > fit[worst]) {
            memcpy(pop[worst], child, sizeof child);
            fit[worst] = f;
            depth[worst] = depth[w] + 1;
        }
    }
    size_t best = 0;
    for (size_t i = 1; i < np; i++)
        if (fit[i] > fit[best])
            best = i;
    memcpy(a, pop[best], N * sizeof *a);
}

int cil_micro_agent_choose(cil_micro_agent *ag, double load, long *alloc)
{
    if (!ag || !alloc || !isfinite(load) || load <= 0)
        return -1;
    long a[N];
    /* Every learner starts from the equal split: nothing is known yet. */
    if (ag->policy == CIL_MICRO_FAIR || ag->nelites == 0)
        fair(a);
    else if (ag->policy == CIL_MICRO_EVOALG)
        choose_evoalg(ag, a);
    else if (ag->policy == CIL_MICRO_EGREEDY)
        choose_egreedy(ag, a);
    else
        choose_ucb(ag, load, a);
    if (!valid(a))
        return -1;
    memcpy(alloc, a, sizeof a);
    return 0;
}

/* The GP learns -log P99: latencies span two orders of magnitude, and the log makes
 * the response smoother and the noise (multiplicative) homoscedastic. */
static int ucb_observe(cil_micro_agent *ag, const long *alloc, double load, double p99)
{
    static const double LS[] = {0.5, 1.0, 2.0, 4.0};
    static const double SN2[] = {0.01, 0.05, 0.2};
    double x[N + 1];
    gp_input(ag, alloc, load, x);
    if (cil_gp_add(ag->gp, x, -log(p99)) != 0)
        return -1;
    if (ag->rounds % GP_REFIT_EVERY == 0)
        return cil_gp_fit_ml(ag->gp, LS, sizeof LS / sizeof *LS, SN2, sizeof SN2 / sizeof *SN2,
                             NULL);
    return cil_gp_fit(ag->gp);
}

int cil_micro_agent_observe(cil_micro_agent *ag, const long *alloc, double load, double p99)
{
    if (!ag || !alloc || !valid(alloc) || !isfinite(load) || load <= 0 || !isfinite(p99) ||
        p99 <= 0)
        return -1;
    if (ag->rounds == 0)
        ag->load_ref = load;
    ag->rounds++;
    elites_add(ag, alloc, -p99);
    if (ag->policy == CIL_MICRO_UCB)
        return ucb_observe(ag, alloc, load, p99);
    return 0;
}
