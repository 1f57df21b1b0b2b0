/* fuzz_storage.c: the GCS's embedded table store (runtime/storage.c, storage_memory.c)
 * against a model: random batches of puts and deletes over two tables and 256 keys,
 * committed or dropped, with reads and scans in between, must read back exactly what the
 * model holds (the memory store is what the GCS reloads its tables from in tests, and
 * what serves every write when no Redis is given).
 *
 * Input: a sequence of operations, each an opcode byte and its operand bytes. */
#include "fuzz_util.h"

#include "storage.h"

#define NTABLES 2
#define NKEYS 256
#define VMAX 16
#define MAX_PENDING 512

static const char *const tables[NTABLES] = {"a", "b"};

typedef struct {
    int len; /* -1: absent */
    uint8_t v[VMAX];
} cell;

typedef struct {
    int del, t, k;
    cell c;
} op;

typedef struct {
    cell rows[NTABLES][NKEYS];
    op pending[MAX_PENDING];
    int npending;
    const cell (*scan_rows)[NKEYS];
    int scan_t;
    long scan_seen;
} model;

/* A byte reader over the input: 0 once it is used up. */
typedef struct {
    const uint8_t *p;
    size_t n;
} input;

static uint8_t next(input *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

static void key_name(int k, char *buf)
{
    snprintf(buf, 8, "k%d", k);
}

static void check_get(esc_storage *st, const model *m, int t, int k)
{
    char key[8];
    key_name(k, key);
    void *v = NULL;
    size_t len = 0;
    int rc = esc_storage_get(st, tables[t], key, &v, &len);
    const cell *c = &m->rows[t][k];
    FUZZ_CHECK(rc == (c->len >= 0 ? 1 : 0));
    if (rc == 1)
        FUZZ_CHECK(len == (size_t)c->len && memcmp(v, c->v, len) == 0);
    free(v);
}

static void on_row(void *ud, const char *key, const void *value, size_t len)
{
    model *m = ud;
    int k = -1;
    FUZZ_CHECK(sscanf(key, "k%d", &k) == 1 && k >= 0 && k < NKEYS);
    const cell *c = &m->rows[m->scan_t][k];
    FUZZ_CHECK(c->len >= 0 && len == (size_t)c->len && memcmp(value, c->v, len) == 0);
    m->scan_seen++;
}

static void check_scan(esc_storage *st, model *m, int t)
{
    long want = 0;
    for (int k = 0; k < NKEYS; k++)
        want += m->rows[t][k].len >= 0;
    m->scan_t = t;
    m->scan_seen = 0;
    FUZZ_CHECK(esc_storage_scan(st, tables[t], on_row, m) == want && m->scan_seen == want);
}

/* Adds a put or a delete to the batch and to the model's pending list. */
static void add_write(esc_storage_batch *b, model *m, input *in, int del)
{
    if (m->npending == MAX_PENDING)
        return;
    op *o = &m->pending[m->npending++];
    o->del = del;
    o->t = next(in) % NTABLES;
    o->k = next(in);
    char key[8];
    key_name(o->k, key);
    if (del) {
        esc_storage_del(b, tables[o->t], key);
        return;
    }
    o->c.len = next(in) % (VMAX + 1);
    for (int i = 0; i < o->c.len; i++)
        o->c.v[i] = next(in);
    esc_storage_put(b, tables[o->t], key, o->c.v, (size_t)o->c.len);
}

static void apply_pending(model *m)
{
    for (int i = 0; i < m->npending; i++) {
        const op *o = &m->pending[i];
        if (o->del)
            m->rows[o->t][o->k].len = -1;
        else
            m->rows[o->t][o->k] = o->c;
    }
    m->npending = 0;
}

static void run(esc_storage *st, model *m, input *in)
{
    char err[256];
    esc_storage_batch *b = esc_storage_batch_new();
    while (in->n > 0) {
        switch (next(in) % 6) {
        case 0:
        case 1:
            add_write(b, m, in, 0);
            break;
        case 2:
            add_write(b, m, in, 1);
            break;
        case 3:
            FUZZ_CHECK(esc_storage_batch_size(b) == (size_t)m->npending);
            FUZZ_CHECK(esc_storage_commit(st, b, err, sizeof err) == 0);
            apply_pending(m);
            b = esc_storage_batch_new();
            break;
        case 4: {
            int t = next(in) % NTABLES;
            check_get(st, m, t, next(in));
            break;
        }
        default:
            check_scan(st, m, next(in) % NTABLES);
        }
    }
    esc_storage_batch_free(b); /* dropped: nothing of it may show */
    m->npending = 0;
    for (int t = 0; t < NTABLES; t++)
        check_scan(st, m, t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static model m;
    memset(&m, 0, sizeof m);
    for (int t = 0; t < NTABLES; t++)
        for (int k = 0; k < NKEYS; k++)
            m.rows[t][k].len = -1;
    char err[256];
    esc_storage *st = esc_storage_open("memory", err, sizeof err);
    FUZZ_CHECK(st != NULL);
    input in = {data, size};
    run(st, &m, &in);
    esc_storage_close(st);
    return 0;
}
