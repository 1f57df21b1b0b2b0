/* cluster_file.c: the cluster file of `escher up` (docs/deploy.md, "Multi-host
 * clusters"), read with libyaml. Every error is one line naming the file, the line and
 * the key. */
#include "cluster.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "names.h"
#include "qty.h"
#include "xalloc.h"

typedef struct {
    const char *path;
    yaml_document_t *doc;
} ctx;

static int err(const ctx *x, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int err(const ctx *x, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "escher: %s:%zu: ", x->path, n ? n->start_mark.line + 1 : 1);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return -1;
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int want_scalar(const ctx *x, const yaml_node_t *v, const char *key, char **out)
{
    const char *s = scalar(v);
    if (!s)
        return err(x, v, "%s wants a single value", key);
    free(*out);
    *out = esc_xstrdup(s);
    return 0;
}

static int want_port(const ctx *x, const yaml_node_t *v, const char *key, int lo, int *out)
{
    const char *s = scalar(v);
    char *end;
    errno = 0;
    long p = s ? strtol(s, &end, 10) : -1;
    if (!s || !*s || *end || errno || p < lo || p > 65535)
        return err(x, v, "%s wants a port number %d..65535, not \"%s\"", key, lo, s ? s : "");
    *out = (int)p;
    return 0;
}

static int want_bool(const ctx *x, const yaml_node_t *v, const char *key, bool *out)
{
    const char *s = scalar(v);
    if (s && (!strcmp(s, "true") || !strcmp(s, "yes")))
        *out = true;
    else if (s && (!strcmp(s, "false") || !strcmp(s, "no")))
        *out = false;
    else
        return err(x, v, "%s wants true or false, not \"%s\"", key, s ? s : "");
    return 0;
}

/* A non-negative quantity (CPUs, bytes, a custom resource). */
static int want_qty(const ctx *x, const yaml_node_t *v, const char *key, char **out)
{
    const char *s = scalar(v);
    int64_t q;
    bool unb = false;
    if (!s || esc_qty_parse(s, &q, &unb) != 0 || unb || q < 0)
        return err(x, v, "%s wants a non-negative number, not \"%s\"", key, s ? s : "");
    return want_scalar(x, v, key, out);
}

static int map_add(cl_map *m, const char *k, const char *v)
{
    m->v = esc_xrealloc(m->v, (m->n + 1) * sizeof *m->v);
    m->v[m->n].key = esc_xstrdup(k);
    m->v[m->n].value = esc_xstrdup(v);
    m->n++;
    return 0;
}

static void map_free(cl_map *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].key);
        free(m->v[i].value);
    }
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

typedef int (*pair_fn)(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg);

/* Calls fn for each KEY: VALUE of a mapping. */
static int each_pair(const ctx *x, yaml_node_t *map, const char *what, pair_fn fn, void *arg)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return err(x, map, "%s wants a mapping (KEY: VALUE lines)", what);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *ks = scalar(k);
        if (!ks)
            return err(x, k, "a key of %s is not a plain word", what);
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(ks, scalar(yaml_document_get_node(x->doc, q->key))))
                return err(x, k, "key \"%s\" of %s is given twice", ks, what);
        if (fn(x, ks, k, v, arg) != 0)
            return -1;
    }
    return 0;
}

/* A string map (environment, labels) or a quantity map (resources). */
typedef struct {
    cl_map *m;
    const char *what;
    int kind; /* 0: env, 1: labels, 2: resources */
} map_arg;

static int map_pair(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    map_arg *a = arg;
    const char *s = scalar(v);
    if (!s)
        return err(x, v, "%s.%s wants a single value", a->what, key);
    if (a->kind == 0) {
        for (const char *c = key; *c; c++)
            if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                  (c > key && *c >= '0' && *c <= '9')))
                return err(x, k, "%s: \"%s\" is not an environment variable name", a->what, key);
    } else if (a->kind == 1) {
        if (strchr(key, ',') || strchr(key, '=') || strchr(s, ','))
            return err(x, k, "%s.%s: labels may not hold ',' or '=' in keys, ',' in values",
                       a->what, key);
    } else {
        int64_t q;
        bool unb = false;
        if (!esc_name_valid(key))
            return err(x, k, "%s: invalid resource name \"%s\"", a->what, key);
        if (esc_name_is_physical(key))
            return err(x, k, "%s: %s is set with num_cpus, num_gpus or memory", a->what, key);
        if (esc_qty_parse(s, &q, &unb) != 0 || unb || q < 0)
            return err(x, v, "%s.%s wants a non-negative number, not \"%s\"", a->what, key, s);
    }
    return map_add(a->m, key, s);
}

static int load_map(const ctx *x, yaml_node_t *v, cl_map *m, const char *what, int kind)
{
    map_arg a = {m, what, kind};
    return each_pair(x, v, what, map_pair, &a);
}

static cl_host *find_host(cl_cluster *c, const char *addr)
{
    for (size_t i = 0; i < c->nhosts; i++)
        if (!strcmp(c->hosts[i].address, addr))
            return &c->hosts[i];
    return NULL;
}

static int add_host(const ctx *x, cl_cluster *c, yaml_node_t *v, const char *key)
{
    const char *s = scalar(v);
    if (!s || !*s || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:") !=
                         strlen(s))
        return err(x, v, "%s wants a host name or IP address, not \"%s\"", key, s ? s : "");
    if (find_host(c, s))
        return err(x, v, "%s: host %s is listed twice", key, s);
    if (c->nhosts >= CL_MAX_HOSTS)
        return err(x, v, "%s: more than %d hosts", key, CL_MAX_HOSTS);
    c->hosts[c->nhosts++].address = esc_xstrdup(s);
    return 0;
}

static int provider_pair(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    cl_cluster *c = arg;
    if (!strcmp(key, "type")) {
        const char *s = scalar(v);
        if (!s || strcmp(s, "local") != 0)
            return err(x, v, "provider.type: only \"local\" (hosts you name) is known, not \"%s\"",
                       s ? s : "");
        return 0;
    }
    if (!strcmp(key, "head_ip")) {
        if (c->nhosts > 0)
            return err(x, v, "provider.head_ip given twice");
        return add_host(x, c, v, "provider.head_ip");
    }
    if (!strcmp(key, "worker_ips")) {
        if (c->nhosts == 0)
            return err(x, k, "provider.worker_ips: give provider.head_ip before it");
        if (v->type != YAML_SEQUENCE_NODE)
            return err(x, v, "provider.worker_ips wants a list of hosts");
        for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
            if (add_host(x, c, yaml_document_get_node(x->doc, *i), "provider.worker_ips") != 0)
                return -1;
        return 0;
    }
    return err(x, k, "unknown key \"provider.%s\"", key);
}

static int auth_pair(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    cl_cluster *c = arg;
    if (!strcmp(key, "ssh_user"))
        return want_scalar(x, v, "auth.ssh_user", &c->ssh_user);
    if (!strcmp(key, "ssh_private_key"))
        return want_scalar(x, v, "auth.ssh_private_key", &c->ssh_key);
    if (!strcmp(key, "ssh_port"))
        return want_port(x, v, "auth.ssh_port", 1, &c->ssh_port);
    return err(x, k, "unknown key \"auth.%s\"", key);
}

static int ports_pair(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    cl_cluster *c = arg;
    if (!strcmp(key, "gcs"))
        return want_port(x, v, "ports.gcs", 1, &c->gcs_port);
    if (!strcmp(key, "raylet"))
        return want_port(x, v, "ports.raylet", 0, &c->raylet_port);
    return err(x, k, "unknown key \"ports.%s\"", key);
}

typedef struct {
    cl_host *h;
    char what[300];
} host_arg;

static int host_pair(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    host_arg *a = arg;
    cl_host *h = a->h;
    char what[400];
    snprintf(what, sizeof what, "%s.%s", a->what, key);
    if (!strcmp(key, "num_cpus"))
        return want_qty(x, v, what, &h->num_cpus);
    if (!strcmp(key, "num_gpus"))
        return want_qty(x, v, what, &h->num_gpus);
    if (!strcmp(key, "memory"))
        return want_qty(x, v, what, &h->memory);
    if (!strcmp(key, "object_store_memory"))
        return want_qty(x, v, what, &h->object_store_memory);
    if (!strcmp(key, "resources"))
        return load_map(x, v, &h->resources, what, 2);
    if (!strcmp(key, "labels"))
        return load_map(x, v, &h->labels, what, 1);
    if (!strcmp(key, "environment"))
        return load_map(x, v, &h->env, what, 0);
    return err(x, k, "unknown key \"%s\"", what);
}

static int hosts_pair(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    cl_cluster *c = arg;
    host_arg a;
    a.h = find_host(c, key);
    snprintf(a.what, sizeof a.what, "hosts.%s", key);
    if (!a.h)
        return err(x, k, "hosts: %s is neither provider.head_ip nor in provider.worker_ips", key);
    if (v->type == YAML_SCALAR_NODE && !*scalar(v))
        return 0; /* "HOST:" with nothing under it */
    return each_pair(x, v, a.what, host_pair, &a);
}

static int top_pair(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    cl_cluster *c = arg;
    if (!strcmp(key, "cluster_name")) {
        if (want_scalar(x, v, key, &c->name) != 0)
            return -1;
        if (!esc_name_valid(c->name) || strchr(c->name, '/'))
            return err(x, v, "cluster_name: \"%s\" is not a valid name (letters, digits, _-.)",
                       c->name);
        return 0;
    }
    if (!strcmp(key, "provider"))
        return each_pair(x, v, key, provider_pair, c);
    if (!strcmp(key, "auth"))
        return each_pair(x, v, key, auth_pair, c);
    if (!strcmp(key, "ports"))
        return each_pair(x, v, key, ports_pair, c);
    if (!strcmp(key, "install_prefix")) {
        if (want_scalar(x, v, key, &c->prefix) != 0)
            return -1;
        if (c->prefix[0] != '/')
            return err(x, v, "install_prefix wants an absolute path, not \"%s\"", c->prefix);
        return 0;
    }
    if (!strcmp(key, "session_dir")) {
        if (want_scalar(x, v, key, &c->session_dir) != 0)
            return -1;
        if (c->session_dir[0] != '/')
            return err(x, v, "session_dir wants an absolute path, not \"%s\"", c->session_dir);
        return 0;
    }
    if (!strcmp(key, "storage")) {
        if (want_scalar(x, v, key, &c->storage) != 0)
            return -1;
        if (strcmp(c->storage, "memory") != 0 && strncmp(c->storage, "redis://", 8) != 0)
            return err(x, v, "storage wants memory or redis://HOST:PORT, not \"%s\"", c->storage);
        return 0;
    }
    if (!strcmp(key, "node_timeout_ms")) {
        const char *s = scalar(v);
        char *end;
        long long n = s ? strtoll(s, &end, 10) : -1;
        if (!s || !*s || *end || n < 1 || n > 86400000)
            return err(x, v, "node_timeout_ms wants milliseconds 1..86400000, not \"%s\"",
                       s ? s : "");
        return want_scalar(x, v, key, &c->node_timeout_ms);
    }
    if (!strcmp(key, "systemd"))
        return want_bool(x, v, key, &c->systemd);
    if (!strcmp(key, "environment"))
        return load_map(x, v, &c->env, key, 0);
    if (!strcmp(key, "hosts"))
        return 0; /* after provider: see cl_load */
    return err(x, k, "unknown key \"%s\"", key);
}

static int hosts_top(const ctx *x, const char *key, yaml_node_t *k, yaml_node_t *v, void *arg)
{
    (void)k;
    return strcmp(key, "hosts") == 0 ? each_pair(x, v, "hosts", hosts_pair, arg) : 0;
}

int cl_load(const char *path, cl_cluster *c)
{
    memset(c, 0, sizeof *c);
    c->path = esc_xstrdup(path);
    c->ssh_port = 22;
    c->gcs_port = 6380;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "escher: %s: %s\n", path, strerror(errno));
        cl_free(c);
        return -1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    int rc = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        fprintf(stderr, "escher: %s:%zu: %s %s\n", path, parser.problem_mark.line + 1,
                parser.problem ? parser.problem : "invalid YAML",
                parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        fclose(f);
        cl_free(c);
        return -1;
    }
    ctx x = {path, &doc};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root)
        rc = err(&x, NULL, "the file is empty");
    if (!rc)
        rc = each_pair(&x, root, "the cluster file", top_pair, c);
    if (!rc)
        rc = each_pair(&x, root, "the cluster file", hosts_top, c);
    if (!rc && !c->name)
        rc = err(&x, root, "cluster_name is missing");
    if (!rc && c->nhosts == 0)
        rc = err(&x, root, "provider.head_ip is missing");
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    if (rc) {
        cl_free(c); /* what was read before the error */
        return -1;
    }
    if (!c->prefix)
        c->prefix = esc_xstrdup("/usr/local");
    if (!c->storage)
        c->storage = esc_xstrdup("memory");
    if (!c->session_dir)
        c->session_dir = esc_xstrdup("/tmp/escher/cluster_{name}_{host}");
    return 0;
}

void cl_free(cl_cluster *c)
{
    for (size_t i = 0; i < c->nhosts; i++) {
        cl_host *h = &c->hosts[i];
        free(h->address);
        free(h->num_cpus);
        free(h->num_gpus);
        free(h->memory);
        free(h->object_store_memory);
        map_free(&h->resources);
        map_free(&h->labels);
        map_free(&h->env);
    }
    map_free(&c->env);
    free(c->path);
    free(c->name);
    free(c->ssh_user);
    free(c->ssh_key);
    free(c->prefix);
    free(c->storage);
    free(c->node_timeout_ms);
    free(c->session_dir);
    memset(c, 0, sizeof *c);
}

char *cl_session_dir(const cl_cluster *c, const cl_host *h)
{
    cl_str b = {0};
    for (const char *p = c->session_dir; *p;) {
        if (!strncmp(p, "{host}", 6)) {
            cl_puts(&b, h->address);
            p += 6;
        } else if (!strncmp(p, "{name}", 6)) {
            cl_puts(&b, c->name);
            p += 6;
        } else {
            char one[2] = {*p++, 0};
            cl_puts(&b, one);
        }
    }
    return b.s;
}
