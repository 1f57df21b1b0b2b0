/* test_job_mirror.c: the raylet's mirror of the running jobs (raylet/job_mirror.c):
 * credentials against the stored hash (and the cached one), the namespaces a job's tasks
 * may consume, grants and their revocation, a job's end, and a snapshot that replaces
 * everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gcs.h"
#include "job_mirror.h"

#define CRED_A "aaaa000000000000000000000000000000000000000000000000000000000001"
#define CRED_B "bbbb000000000000000000000000000000000000000000000000000000000002"

/* Applies an EV_JOB_UPDATED (or, with snapshot, an EV_SNAPSHOT) of one row. */
static void job_row(job_mirror *m, const char *id, const char *ns, const char *cred,
                    const char *grantee, bool snapshot)
{
    Escher__JobInfo row = ESCHER__JOB_INFO__INIT;
    char hash[65];
    gcs_auth_hash(cred, hash);
    row.job_id = (char *)id;
    row.namespace_ = (char *)ns;
    row.state = ESCHER__JOB_STATE__JOB_RUNNING;
    row.credential_sha256 = hash;
    char *grants[] = {(char *)grantee};
    row.grants = grantee ? grants : NULL;
    row.n_grants = grantee ? 1 : 0;
    Escher__JobInfo *rows[] = {&row};
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = snapshot ? ESCHER__EVENT_KIND__EV_SNAPSHOT : ESCHER__EVENT_KIND__EV_JOB_UPDATED;
    ev.jobs = rows;
    ev.n_jobs = 1;
    job_mirror_apply(m, &ev);
}

static void job_end(job_mirror *m, const char *id)
{
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = ESCHER__EVENT_KIND__EV_JOB_FINISHED;
    ev.job_id = (char *)id;
    job_mirror_apply(m, &ev);
}

static int verify(job_mirror *m, const char *id, const char *cred)
{
    char why[300];
    return job_mirror_verify(m, id, cred, why, sizeof why);
}

static int uses(job_mirror *m, const char *id, const char *name)
{
    char why[300] = "";
    int rc = job_mirror_resource_ok(m, id, name, NULL, why, sizeof why);
    assert_true(rc == ESC_OK || (*why && !strchr(why, '\n')));
    return rc;
}

static void test_credentials(void **state)
{
    (void)state;
    job_mirror *m = job_mirror_new();
    assert_int_equal(verify(m, "ja", CRED_A), ESC_PERMISSION_DENIED); /* not known yet */
    job_row(m, "ja", "alpha", CRED_A, NULL, false);
    assert_true(job_mirror_knows(m, "ja"));
    assert_int_equal(verify(m, "ja", CRED_A), ESC_OK);
    assert_int_equal(verify(m, "ja", CRED_A), ESC_OK); /* the cached one */
    assert_int_equal(verify(m, "ja", CRED_B), ESC_PERMISSION_DENIED);
    assert_int_equal(verify(m, "ja", ""), ESC_PERMISSION_DENIED);
    assert_int_equal(verify(m, "ja", CRED_A), ESC_OK); /* a wrong one did not evict it */
    /* A grant change keeps the credential; a new hash drops the cached one. */
    job_row(m, "ja", "alpha", CRED_A, "jb", false);
    assert_int_equal(verify(m, "ja", CRED_A), ESC_OK);
    job_row(m, "ja", "alpha", CRED_B, NULL, false);
    assert_int_equal(verify(m, "ja", CRED_A), ESC_PERMISSION_DENIED);
    assert_int_equal(verify(m, "ja", CRED_B), ESC_OK);
    job_end(m, "ja");
    assert_false(job_mirror_knows(m, "ja"));
    assert_int_equal(verify(m, "ja", CRED_B), ESC_PERMISSION_DENIED);
    job_mirror_free(m);
}

static void test_namespaces_and_grants(void **state)
{
    (void)state;
    job_mirror *m = job_mirror_new();
    job_row(m, "ja", "alpha", CRED_A, NULL, false);
    job_row(m, "jb", "beta", CRED_B, NULL, false);
    assert_int_equal(uses(m, "jb", "CPU"), ESC_OK);            /* physical */
    assert_int_equal(uses(m, "jb", "default/lane"), ESC_OK);   /* shared */
    assert_int_equal(uses(m, "jb", "_sys/x"), ESC_OK);         /* the system's */
    assert_int_equal(uses(m, "jb", "nobody/x"), ESC_OK);       /* no running owner */
    assert_int_equal(uses(m, "ja", "alpha/gang"), ESC_OK);     /* its own */
    assert_int_equal(uses(m, "jb", "alpha/gang"), ESC_PERMISSION_DENIED);
    assert_false(job_mirror_may_use(m, "jb", "ja"));
    job_row(m, "ja", "alpha", CRED_A, "jb", false);            /* granted */
    assert_int_equal(uses(m, "jb", "alpha/gang"), ESC_OK);
    assert_true(job_mirror_may_use(m, "jb", "ja"));
    assert_false(job_mirror_may_use(m, "ja", "jb"));           /* not both ways */
    job_row(m, "ja", "alpha", CRED_A, NULL, false);            /* revoked */
    assert_int_equal(uses(m, "jb", "alpha/gang"), ESC_PERMISSION_DENIED);
    job_end(m, "ja");                                          /* alpha is free again */
    assert_int_equal(uses(m, "jb", "alpha/gang"), ESC_OK);
    job_mirror_free(m);
}

/* An EV_JOB_UPDATED of ja in alpha whose only grants are prefixes to jb. */
static void prefix_row(job_mirror *m, const char *const *prefixes, size_t n)
{
    Escher__JobInfo row = ESCHER__JOB_INFO__INIT;
    char hash[65];
    gcs_auth_hash(CRED_A, hash);
    row.job_id = "ja";
    row.namespace_ = "alpha";
    row.state = ESCHER__JOB_STATE__JOB_RUNNING;
    row.credential_sha256 = hash;
    Escher__PrefixGrant pg[4], *pgs[4];
    for (size_t i = 0; i < n && i < 4; i++) {
        escher__prefix_grant__init(&pg[i]);
        pg[i].grantee = "jb";
        pg[i].prefix = (char *)prefixes[i];
        pgs[i] = &pg[i];
    }
    row.prefix_grants = pgs;
    row.n_prefix_grants = n;
    Escher__JobInfo *rows[] = {&row};
    Escher__Event ev = ESCHER__EVENT__INIT;
    ev.kind = ESCHER__EVENT_KIND__EV_JOB_UPDATED;
    ev.jobs = rows;
    ev.n_jobs = 1;
    job_mirror_apply(m, &ev);
}

/* A prefix grant covers the names that start with one of its prefixes, per name (not
 * the namespace), and never the owner's actors or objects (job_mirror_may_use). */
static void test_prefix_grants(void **state)
{
    (void)state;
    job_mirror *m = job_mirror_new();
    const char *prefixes[] = {"t1.", "t2."};
    prefix_row(m, prefixes, 2);
    job_row(m, "jb", "beta", CRED_B, NULL, false);
    char why[300] = "";
    bool per_name = false;
    assert_int_equal(job_mirror_resource_ok(m, "jb", "alpha/t1.cpu", &per_name, why, sizeof why),
                     ESC_OK);
    assert_true(per_name);
    assert_int_equal(uses(m, "jb", "alpha/t2.cpu"), ESC_OK);
    assert_int_equal(job_mirror_resource_ok(m, "jb", "alpha/gang", NULL, why, sizeof why),
                     ESC_PERMISSION_DENIED);
    assert_non_null(strstr(why, "\"t1.\", \"t2.\""));
    assert_int_equal(uses(m, "jb", "alpha/t1"), ESC_PERMISSION_DENIED); /* shorter */
    assert_int_equal(uses(m, "jc", "alpha/t1.cpu"), ESC_PERMISSION_DENIED); /* not jc's */
    assert_false(job_mirror_may_use(m, "jb", "ja"));
    assert_int_equal(job_mirror_resource_ok(m, "ja", "alpha/gang", &per_name, why, sizeof why),
                     ESC_OK);
    assert_false(per_name); /* its own: the whole namespace */
    prefix_row(m, prefixes, 0);                                /* revoked */
    assert_int_equal(uses(m, "jb", "alpha/t1.cpu"), ESC_PERMISSION_DENIED);
    job_mirror_free(m);
}

static void test_snapshot_replaces(void **state)
{
    (void)state;
    job_mirror *m = job_mirror_new();
    job_row(m, "ja", "alpha", CRED_A, NULL, false);
    job_row(m, "jb", "beta", CRED_B, NULL, true); /* a snapshot: jb only */
    assert_false(job_mirror_knows(m, "ja"));
    assert_true(job_mirror_knows(m, "jb"));
    assert_int_equal(uses(m, "jc", "alpha/x"), ESC_OK);
    assert_int_equal(uses(m, "jc", "beta/x"), ESC_PERMISSION_DENIED);
    job_mirror_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credentials),
        cmocka_unit_test(test_namespaces_and_grants),
        cmocka_unit_test(test_prefix_grants),
        cmocka_unit_test(test_snapshot_replaces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
