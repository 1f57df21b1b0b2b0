/* spec_args.c: see spec_args.h. */
#include "spec_args.h"

#include <stdio.h>
#include <string.h>

#include "job_mirror.h"
#include "object_fetch.h"
#include "object_service.h"
#include "raylet.h"

static bool arg_missing(struct raylet *r, const Escher__TaskArg *a)
{
    object_view v;
    return *a->object_id && !object_service_get(r, a->object_id, &v);
}

bool spec_args_missing(struct raylet *r, const Escher__TaskSpec *spec)
{
    for (size_t i = 0; i < spec->n_args; i++)
        if (arg_missing(r, spec->args[i]))
            return true;
    return false;
}

bool spec_args_fetch(struct raylet *r, const Escher__TaskSpec *spec)
{
    bool missing = false;
    for (size_t i = 0; i < spec->n_args; i++) {
        if (arg_missing(r, spec->args[i])) {
            object_fetch_start(r->fetcher, spec->args[i]->object_id, spec->job_id,
                               spec->job_credential);
            missing = true;
        }
    }
    return missing;
}

bool spec_args_waits_for(struct raylet *r, const Escher__TaskSpec *spec, const char *id)
{
    for (size_t i = 0; i < spec->n_args; i++)
        if (!strcmp(spec->args[i]->object_id, id) && arg_missing(r, spec->args[i]))
            return true;
    return false;
}

const char *spec_args_lend(struct raylet *r, Escher__TaskSpec *spec, char *why, size_t len)
{
    for (size_t i = 0; i < spec->n_args; i++) {
        Escher__TaskArg *a = spec->args[i];
        if (!*a->object_id)
            continue;
        object_view v;
        if (!object_service_get(r, a->object_id, &v)) {
            snprintf(why, len, "argument object %.80s is not on this node", a->object_id);
            return why;
        }
        /* A copy here is no licence: the object's job must be the spec's or grant it
         * (the same rule as Pull, docs/security.md, "Objects"). */
        if (*v.job_id && !job_mirror_may_use(r->jobs, spec->job_id, v.job_id)) {
            snprintf(why, len, "PERMISSION_DENIED: argument %.80s belongs to job %.40s, which did "
                     "not grant its namespace to job %.40s", a->object_id, v.job_id,
                     spec->job_id);
            return why;
        }
        if (v.is_error) {
            snprintf(why, len, "argument %.80s is a failed task's: %.300s", a->object_id, v.error);
            return why;
        }
        a->data = (ProtobufCBinaryData){(size_t)v.size, (uint8_t *)v.data};
    }
    return NULL;
}

void spec_args_unlend(Escher__TaskSpec *spec)
{
    for (size_t i = 0; i < spec->n_args; i++)
        if (*spec->args[i]->object_id)
            spec->args[i]->data = (ProtobufCBinaryData){0, NULL};
}
