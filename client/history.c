/* history.c: the cluster's event history (ListEvents; escher.h, "event history"). */
#include "client_internal.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_names[ESC_HIST_KINDS] = {
    "node_added", "node_draining", "node_dead",    "job_started",        "job_ended",
    "resources",  "task_failed",   "task_retried", "task_events_dropped"};

const char *esc_history_kind_name(esc_history_kind k)
{
    return (unsigned)k < ESC_HIST_KINDS ? kind_names[k] : "unknown";
}

bool esc_history_kind_parse(const char *name, esc_history_kind *out)
{
    for (unsigned i = 0; name && i < ESC_HIST_KINDS; i++)
        if (!strcmp(name, kind_names[i])) {
            *out = (esc_history_kind)i;
            return true;
        }
    return false;
}

static const char *op_name(Escher__OpKind k)
{
    switch (k) {
    case ESCHER__OP_KIND__OP_SET:
        return "set";
    case ESCHER__OP_KIND__OP_ADD:
        return "add";
    case ESCHER__OP_KIND__OP_DELETE:
        return "delete";
    default:
        return "unknown";
    }
}

static const char *end_state(const Escher__HistoryEvent *p)
{
    if (p->kind != ESCHER__HISTORY_KIND__H_JOB_ENDED)
        return "";
    return p->job_state == ESCHER__JOB_STATE__JOB_FAILED ? "FAILED" : "FINISHED";
}

static void fill(esc_history_event *e, const Escher__HistoryEvent *p)
{
    e->id = p->id;
    e->time_ms = p->time_ms;
    e->kind = (esc_history_kind)p->kind;
    e->seq = p->seq;
    e->node_id = esc_xstrdup(p->node_id);
    e->job_id = esc_xstrdup(p->job_id);
    e->namespace_ = esc_xstrdup(p->namespace_);
    e->job_state = esc_xstrdup(end_state(p));
    e->address = esc_xstrdup(p->address);
    e->hostname = esc_xstrdup(p->hostname);
    e->entrypoint = esc_xstrdup(p->entrypoint);
    e->task_id = esc_xstrdup(p->task_id);
    e->task_name = esc_xstrdup(p->task_name);
    e->error = esc_xstrdup(p->error);
    e->attempt = p->attempt;
    e->max_retries = p->max_retries;
    e->dropped = p->dropped;
    e->ops_total = p->ops_total;
    e->ops = esc_xcalloc(p->n_ops + 1, sizeof *e->ops);
    for (size_t i = 0; i < p->n_ops; i++) {
        const Escher__LogOp *o = p->ops[i];
        e->ops[i] = (esc_history_op){esc_xstrdup(op_name(o->kind)), esc_xstrdup(o->node_id),
                                     esc_xstrdup(o->name), o->value, o->unbounded};
    }
    e->nops = p->n_ops;
}

static int check_filter(const esc_history_filter *f, esc_status *st)
{
    if (f->nkinds > ESC_HIST_KINDS || (f->nkinds && !f->kinds))
        return esc_status_set(st, ESC_INVALID_ARGUMENT, "at most %d kinds, and not NULL",
                              ESC_HIST_KINDS);
    for (size_t i = 0; i < f->nkinds; i++)
        if ((unsigned)f->kinds[i] >= ESC_HIST_KINDS)
            return esc_status_set(st, ESC_INVALID_ARGUMENT, "unknown event kind %d",
                                  (int)f->kinds[i]);
    return ESC_OK;
}

int esc_list_events(esc_client *c, const esc_history_filter *filter,
                    esc_history_event **events, size_t *n, esc_history_page *page,
                    esc_status *st)
{
    *events = NULL;
    *n = 0;
    esc_history_filter none = {0};
    const esc_history_filter *f = filter ? filter : &none;
    int rc = check_filter(f, st);
    if (rc != ESC_OK)
        return rc;
    Escher__ListEventsRequest req = ESCHER__LIST_EVENTS_REQUEST__INIT;
    Escher__HistoryKind kinds[ESC_HIST_KINDS];
    for (size_t i = 0; i < f->nkinds; i++)
        kinds[i] = (Escher__HistoryKind)f->kinds[i];
    req.after_id = f->after_id;
    req.limit = f->limit;
    req.kinds = kinds;
    req.n_kinds = f->nkinds;
    req.node_id = (char *)(f->node_id ? f->node_id : "");
    req.job_id = (char *)(f->job_id ? f->job_id : "");
    ProtobufCMessage *m;
    rc = esc_client_call(c, &ESC_M_GCS_LIST_EVENTS, &req.base, &m, ESC_RPC_IDEMPOTENT, st);
    if (rc != ESC_OK)
        return rc;
    const Escher__ListEventsReply *r = (const Escher__ListEventsReply *)m;
    /* As many as the cluster sent: a checked calloc (escher.h, "Out of memory"). */
    *events = calloc(r->n_events + 1, sizeof **events);
    if (!*events) {
        rc = esc_client_out_of_memory(st, (r->n_events + 1) * sizeof **events);
        protobuf_c_message_free_unpacked(m, NULL);
        return rc;
    }
    for (size_t i = 0; i < r->n_events; i++)
        fill(&(*events)[i], r->events[i]);
    *n = r->n_events;
    if (page)
        *page = (esc_history_page){r->last_id, r->first_id, r->hidden, r->bound};
    protobuf_c_message_free_unpacked(m, NULL);
    return ESC_OK;
}

void esc_history_free(esc_history_event *events, size_t n)
{
    if (!events)
        return;
    for (size_t i = 0; i < n; i++) {
        esc_history_event *e = &events[i];
        char *strs[] = {e->node_id,    e->job_id,  e->namespace_, e->job_state,
                        e->address,    e->hostname, e->entrypoint, e->task_id,
                        e->task_name,  e->error};
        for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
            free(strs[k]);
        for (size_t k = 0; k < e->nops; k++) {
            free(e->ops[k].op);
            free(e->ops[k].node_id);
            free(e->ops[k].name);
        }
        free(e->ops);
    }
    free(events);
}
