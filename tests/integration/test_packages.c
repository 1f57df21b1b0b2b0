/* test_packages.c: a job's code on every node (docs/tasks.md, "Packages").
 *
 * Two "hosts" on one machine: raylet 0 sees the test's files; raylet 1 runs in a mount
 * namespace of its own with an empty tmpfs over SRC, the directory that holds each
 * job's files, so it sees none of them (checked, not assumed). A job makes a directory
 * under SRC its package; its tasks that need only_b (node 1's) run there from the copy
 * that node fetched, verified and cached, and the copy goes when the job ends. Bad
 * packages (a corrupted chunk, a package gone from the GCS, a library path that leaves
 * the package) fail their tasks with one line and leave the raylet running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gcs.pb-c.h"
#include "harness.h"
#include "rpc.h"

static h_cluster C;
static char SRC[250]; /* hidden from raylet 1 */
static const esc_amount ON_B[] = {{.name = "only_b", .value = ESC_QTY(1)}};

static int run_sh(const char *fmt, const char *a, const char *b)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd);
}

static int setup(void **state)
{
    *state = &C;
    if (geteuid() != 0 || system("unshare -m --propagation private true 2>/dev/null") != 0) {
        fprintf(stderr, "test_packages: needs root and unshare -m; skipped\n");
        return 0; /* each test skips */
    }
    h_init(&C, 3000);
    if (snprintf(SRC, sizeof SRC, "%.200s/src", C.dir) >= (int)sizeof SRC)
        return -1;
    if (mkdir(SRC, 0755) != 0)
        return -1;
    memcpy(C.raylets[1].hide_dir, SRC, sizeof SRC);
    return h_start_cluster(&C, 2, (const char *const[]){NULL, "--resources only_b=1"});
}

static void need_cluster(void)
{
    if (!SRC[0])
        skip();
}

/* A job's directory SRC/<name>: lib/libmytasks.so (the test task library), data.txt
 * holding "payload-<name>", and run.sh, which checks data.txt. */
static void make_job_dir(const char *name, char *dir, size_t len)
{
    snprintf(dir, len, "%s/%s", SRC, name);
    char cmd[1500];
    /* a truncated command would run a different shell line: fail instead */
    int cmd_len = snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/lib' && cp '%s' '%s/lib/libmytasks.so' && "
             "printf 'payload-%s' >'%s/data.txt' && "
             "printf '#!/bin/sh\\ntest \"$(cat data.txt)\" = payload-%s\\n' >'%s/run.sh' && "
             "chmod +x '%s/run.sh'",
             dir, h_tasks_lib(), dir, name, dir, name, dir, dir);
    assert_true(cmd_len >= 0 && (size_t)cmd_len < sizeof cmd);
    assert_int_equal(system(cmd), 0);
}

static esc_ref *submit_fn(esc_client *cl, const char *library, const char *fn, const char *arg,
                          bool on_b)
{
    esc_task_arg a = {.data = arg, .len = strlen(arg)};
    esc_task_spec spec = {.library = library, .symbol = fn, .args = &a, .nargs = 1,
                          .resources = on_b ? ON_B : NULL, .nresources = on_b ? 1 : 0};
    esc_ref *ref = NULL;
    esc_status st;
    int rc = esc_task_submit(cl, &spec, &ref, NULL, &st);
    if (rc != ESC_OK)
        fprintf(stderr, "submit: %s\n", st.message);
    assert_int_equal(rc, ESC_OK);
    return ref;
}

static esc_ref *submit_cmd(esc_client *cl, const char *const *argv, bool on_b)
{
    esc_task_spec spec = {.argv = argv, .resources = on_b ? ON_B : NULL,
                          .nresources = on_b ? 1 : 0};
    esc_ref *ref = NULL;
    assert_int_equal(esc_task_submit(cl, &spec, &ref, NULL, NULL), ESC_OK);
    return ref;
}

/* esc_get of ref: the code, the value in *out (caller frees) and st. */
static int get(esc_client *cl, esc_ref *ref, char **out, esc_status *st)
{
    void *v = NULL;
    size_t len;
    int rc = esc_get(cl, ref, 60000, &v, &len, st);
    esc_ref_free(ref);
    if (rc != ESC_OK)
        fprintf(stderr, "  (get: %s: %s)\n", esc_status_name(rc), st->message);
    if (out)
        *out = v;
    else
        free(v);
    return rc;
}

static bool path_gone(void *arg)
{
    struct stat sb;
    return stat(arg, &sb) != 0 && errno == ENOENT;
}

static bool package_gone_from_gcs(void *arg)
{
    esc_connect_opts o = {.address = C.gcs_addr, .token = C.token, .no_job = true,
                          .session_dir = C.dir};
    esc_client *cl;
    if (esc_connect(&o, &cl, NULL) != ESC_OK)
        return false;
    void *v = NULL;
    size_t len;
    int rc = esc_kv_get(cl, "_packages", arg, &v, &len, NULL);
    free(v);
    esc_disconnect(cl);
    return rc == ESC_NOT_FOUND;
}

/* How many times raylet i's log says it fetched hash. */
static int fetches_logged(int i, const char *hash)
{
    char path[400], line[1024], want[64];
    snprintf(path, sizeof path, "%s/raylet.%d.log", C.dir, i);
    snprintf(want, sizeof want, "package %.16s... fetched", hash);
    FILE *f = fopen(path, "r");
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, want) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* Node 1 really cannot see SRC: a command there finds nothing, on node 0 it does. */
static void test_node_b_cannot_see_src(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("probe", dir, sizeof dir);
    char file[450];
    snprintf(file, sizeof file, "%s/data.txt", dir);
    esc_client *cl = h_connect(&C, "probe", 0, false);
    const char *argv[] = {"test", "-e", file, NULL};
    esc_status st;
    assert_int_equal(get(cl, submit_cmd(cl, argv, false), NULL, &st), ESC_OK);
    assert_int_equal(get(cl, submit_cmd(cl, argv, true), NULL, &st), ESC_ABORTED);
    assert_non_null(strstr(st.message, "exited with code 1"));
    esc_disconnect(cl);
}

/* The job's library and files exist only on the submitting side; its tasks run on node
 * 1 from the package, which is fetched once there and removed with the job. */
static void test_package_runs_on_hidden_node(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("alpha", dir, sizeof dir);
    esc_client *cl = h_connect(&C, "alpha", 0, false);
    char hash[ESC_PACKAGE_HASH_MAX];
    esc_status st;
    assert_int_equal(esc_job_package(cl, dir, hash, &st), ESC_OK);
    assert_int_equal(strlen(hash), 64);
    /* The same directory again is the same package: ESC_OK, same hash. */
    char again[ESC_PACKAGE_HASH_MAX];
    assert_int_equal(esc_job_package(cl, dir, again, &st), ESC_OK);
    assert_string_equal(hash, again);

    char *v = NULL;
    for (int i = 0; i < 5; i++) { /* relative library, as in the README */
        assert_int_equal(get(cl, submit_fn(cl, "./lib/libmytasks.so", "echo", "hi", true), &v,
                             &st), ESC_OK);
        assert_string_equal(v, "hi");
        free(v);
    }
    assert_int_equal(get(cl, submit_fn(cl, "lib/libmytasks.so", "getenv_task",
                                       "ESCHER_NODE_ID", true), &v, &st), ESC_OK);
    assert_string_equal(v, C.raylets[1].node_id);
    free(v);
    /* A command starts in the package, on either node. */
    const char *run[] = {"./run.sh", NULL};
    assert_int_equal(get(cl, submit_cmd(cl, run, true), NULL, &st), ESC_OK);
    assert_int_equal(get(cl, submit_cmd(cl, run, false), NULL, &st), ESC_OK);
    /* One fetch per node, however many tasks. */
    assert_int_equal(fetches_logged(1, hash), 1);
    assert_int_equal(fetches_logged(0, hash), 1);

    char cached[600];
    snprintf(cached, sizeof cached, "%s/logs/tasks/packages/raylet-%d/%s/data.txt", C.dir,
             (int)C.raylets[1].pid, hash);
    assert_false(path_gone(cached));
    esc_disconnect(cl); /* the job ends: the copies and the stored package go */
    assert_true(h_wait_until(path_gone, cached, 10000));
    assert_true(h_wait_until(package_gone_from_gcs, hash, 10000));
    assert_true(h_alive(C.raylets[1].pid));
}

/* Chunk 0 replaced after the upload: node 1 refuses the package, the task fails with
 * one line, and nothing is left unpacked. */
static void test_hash_mismatch_refused(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("corrupt", dir, sizeof dir);
    esc_client *cl = h_connect(&C, "corrupt", 0, false);
    char hash[ESC_PACKAGE_HASH_MAX], key[100];
    esc_status st;
    assert_int_equal(esc_job_package(cl, dir, hash, &st), ESC_OK);
    snprintf(key, sizeof key, "%s/0", hash);
    void *chunk;
    size_t len;
    assert_int_equal(esc_kv_get(cl, "_packages", key, &chunk, &len, &st), ESC_OK);
    ((char *)chunk)[len / 2] ^= 0x55;
    assert_int_equal(esc_kv_put(cl, "_packages", key, chunk, len, true, NULL, &st), ESC_OK);
    free(chunk);
    assert_int_equal(get(cl, submit_fn(cl, "lib/libmytasks.so", "echo", "x", true), NULL, &st),
                     ESC_ABORTED);
    assert_non_null(strstr(st.message, "hash mismatch"));
    assert_null(strchr(st.message, '\n'));
    char cached[600];
    snprintf(cached, sizeof cached, "%s/logs/tasks/packages/raylet-%d/%s", C.dir,
             (int)C.raylets[1].pid, hash);
    assert_true(path_gone(cached));
    assert_true(h_alive(C.raylets[1].pid));
    esc_disconnect(cl);
}

/* The package removed from the GCS before any node fetched it. */
static void test_missing_package(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("missing", dir, sizeof dir);
    esc_client *cl = h_connect(&C, "missing", 0, false);
    char hash[ESC_PACKAGE_HASH_MAX];
    esc_status st;
    assert_int_equal(esc_job_package(cl, dir, hash, &st), ESC_OK);
    assert_int_equal(esc_kv_del(cl, "_packages", hash, NULL, &st), ESC_OK);
    assert_int_equal(get(cl, submit_fn(cl, "lib/libmytasks.so", "echo", "x", true), NULL, &st),
                     ESC_ABORTED);
    assert_non_null(strstr(st.message, "is not in the GCS"));
    assert_true(h_alive(C.raylets[1].pid));
    esc_disconnect(cl);
}

/* A relative library may not leave the package, through .. or a symlink; an absolute
 * one (a system library) is used as is. */
static void test_library_stays_inside(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("escape", dir, sizeof dir);
    assert_int_equal(run_sh("ln -s %s %s/evil.so", h_tasks_lib(), dir), 0);
    esc_client *cl = h_connect(&C, "escape", 0, false);
    esc_status st;
    assert_int_equal(esc_job_package(cl, dir, NULL, &st), ESC_OK);
    assert_int_equal(get(cl, submit_fn(cl, "evil.so", "echo", "x", false), NULL, &st),
                     ESC_ABORTED);
    assert_non_null(strstr(st.message, "leads out of the job's package"));
    /* .. up to / and down to the same library, which exists outside the package. */
    char up[1200] = "";
    for (int i = 0; i < 24; i++)
        strcat(up, "../");
    strcat(up, h_tasks_lib() + 1);
    assert_int_equal(get(cl, submit_fn(cl, up, "echo", "x", true), NULL, &st), ESC_ABORTED);
    assert_non_null(strstr(st.message, "leads out of the job's package"));
    assert_int_equal(get(cl, submit_fn(cl, "lib/none.so", "echo", "x", true), NULL, &st),
                     ESC_ABORTED);
    assert_non_null(strstr(st.message, "is not in the job's package"));
    char *v = NULL;
    assert_int_equal(get(cl, submit_fn(cl, h_tasks_lib(), "echo", "abs", false), &v, &st),
                     ESC_OK);
    assert_string_equal(v, "abs");
    free(v);
    esc_disconnect(cl);
}

/* A package whose tar stream has a member "../escaped.txt", stored and named by hand
 * (esc_job_package never makes one): its hash is right, tar refuses the member, the
 * task fails with tar's first line, and nothing lands outside the package. The tasks
 * come from a second client that joins the job, which learns the package at connect. */
static void test_member_escaping_refused(void **state)
{
    (void)state;
    need_cluster();
    char tarpath[400], cmd[1200], hash[ESC_PACKAGE_HASH_MAX] = "";
    snprintf(tarpath, sizeof tarpath, "%s/evil.tar", C.dir);
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import tarfile,io,sys; b=io.BytesIO(); t=tarfile.open(fileobj=b,"
             "mode='w'); i=tarfile.TarInfo('../escaped.txt'); i.size=4; "
             "t.addfile(i,io.BytesIO(b'evil')); t.close(); "
             "open(sys.argv[1],'wb').write(b.getvalue())\" %s",
             tarpath);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "sha256sum %s", tarpath);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%64s", hash), 1);
    pclose(p);
    FILE *f = fopen(tarpath, "rb");
    assert_non_null(f);
    static char bytes[1 << 16];
    size_t n = fread(bytes, 1, sizeof bytes, f);
    fclose(f);

    esc_client *owner = h_connect(&C, "evil", 0, false);
    esc_status st;
    char key[100], manifest[100];
    snprintf(key, sizeof key, "%s/0", hash);
    int mlen = snprintf(manifest, sizeof manifest, "escher-package 1 %zu 1", n);
    assert_int_equal(esc_kv_put(owner, "_packages", key, bytes, n, true, NULL, &st), ESC_OK);
    assert_int_equal(esc_kv_put(owner, "_packages", hash, manifest, (size_t)mlen, true, NULL,
                                &st), ESC_OK);
    Escher__SetJobPackageRequest req = ESCHER__SET_JOB_PACKAGE_REQUEST__INIT;
    req.job_id = (char *)esc_client_job_id(owner);
    req.hash = hash;
    esc_rpc_channel *ch = esc_rpc_channel_new(C.gcs_addr, C.token);
    esc_rpc_channel_set_job(ch, req.job_id, esc_client_job_credential(owner));
    ProtobufCMessage *rep = NULL;
    assert_int_equal(
        esc_rpc_call(ch, &ESC_M_GCS_SET_JOB_PACKAGE, &req.base, &rep, 10000, 0, &st), ESC_OK);
    protobuf_c_message_free_unpacked(rep, NULL);
    esc_rpc_channel_free(ch);

    esc_client *cl = h_join(&C, owner, 0);
    assert_int_equal(get(cl, submit_fn(cl, "lib/libmytasks.so", "echo", "x", true), NULL, &st),
                     ESC_ABORTED);
    assert_non_null(strstr(st.message, "tar refused to unpack it"));
    assert_null(strchr(st.message, '\n'));
    char escaped[600];
    snprintf(escaped, sizeof escaped, "%s/logs/tasks/packages/raylet-%d/escaped.txt", C.dir,
             (int)C.raylets[1].pid);
    assert_true(path_gone(escaped));
    assert_true(h_alive(C.raylets[1].pid));
    esc_disconnect(cl);
    esc_disconnect(owner);
}

/* Every node has applied every event committed so far (the resource log is ordered):
 * a job's end, and the GCS writes queued before it, are done. */
static void settle(esc_client *cl)
{
    uint64_t seq;
    esc_status st;
    esc_target all = {.kind = ESC_TARGET_ALL};
    assert_int_equal(esc_resource_set(cl, "settle", ESC_QTY(1), &all, &seq, &st), ESC_OK);
    assert_int_equal(esc_wait_applied(cl, seq, NULL, 0, 10000, &st), ESC_OK);
}

/* Two jobs with the same files share one package: the first one's end removes neither
 * the stored package nor node 1's copy, and no second fetch happens; the second one's
 * end removes both. */
static void test_shared_package(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("shared", dir, sizeof dir);
    esc_client *a = h_connect(&C, "shared-a", 0, false);
    esc_client *b = h_connect(&C, "shared-b", 0, false);
    char ha[ESC_PACKAGE_HASH_MAX], hb[ESC_PACKAGE_HASH_MAX];
    esc_status st;
    assert_int_equal(esc_job_package(a, dir, ha, &st), ESC_OK);
    assert_int_equal(esc_job_package(b, dir, hb, &st), ESC_OK);
    assert_string_equal(ha, hb);
    char *v = NULL;
    assert_int_equal(get(a, submit_fn(a, "lib/libmytasks.so", "echo", "a", true), &v, &st),
                     ESC_OK);
    free(v);
    assert_int_equal(get(b, submit_fn(b, "lib/libmytasks.so", "echo", "b", true), &v, &st),
                     ESC_OK);
    free(v);
    esc_disconnect(a);
    settle(b);
    char cached[600];
    snprintf(cached, sizeof cached, "%s/logs/tasks/packages/raylet-%d/%s", C.dir,
             (int)C.raylets[1].pid, ha);
    assert_false(path_gone(cached));
    assert_false(package_gone_from_gcs(ha));
    assert_int_equal(get(b, submit_fn(b, "lib/libmytasks.so", "echo", "b", true), &v, &st),
                     ESC_OK);
    free(v);
    assert_int_equal(fetches_logged(1, ha), 1);
    esc_disconnect(b);
    assert_true(h_wait_until(path_gone, cached, 10000));
    assert_true(h_wait_until(package_gone_from_gcs, ha, 10000));
}

/* Runs `escher job submit --working-dir DIR [--resources R] -- ENTRY` (a shell line),
 * with the cluster's address and token and node 0 as the local node. Its exit code. */
static int job_submit(const char *dir, const char *resources, const char *entry)
{
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "ESCHER_ADDRESS=%s ESCHER_TOKEN=%s ESCHER_NODE_ID=%s ESCHER_SESSION_DIR=%s "
             "%s/client/escher job submit --working-dir %s %s %s -- %s >%s/submit.out 2>&1",
             C.gcs_addr, C.token, C.raylets[0].node_id, C.dir, getenv("ESCHER_BIN_DIR"), dir,
             resources ? "--resources" : "", resources ? resources : "", entry, C.dir);
    int rc = system(cmd);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat %s/submit.out >&2", C.dir);
        assert_int_equal(system(cmd), 0);
    }
    return rc;
}

/* `escher job submit --working-dir`: the entrypoint needs only_b, so it runs on node 1,
 * which cannot see the directory, and starts in a copy of it there. */
static void test_job_submit_entrypoint_on_hidden_node(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("submit", dir, sizeof dir);
    assert_int_equal(job_submit(dir, "only_b=1", "./run.sh"), 0);
}

/* The entrypoint runs on node 0 and submits a task with the working directory's library
 * (a relative path) that needs only_b: it runs on node 1, from the package. */
static void test_job_submit_tasks_on_hidden_node(void **state)
{
    (void)state;
    need_cluster();
    char dir[400], entry[600];
    make_job_dir("submit-tasks", dir, sizeof dir);
    snprintf(entry, sizeof entry, "sh -c './run.sh && exec %s/tests/pkg_driver "
             "lib/libmytasks.so only_b from-the-package'", getenv("ESCHER_BIN_DIR"));
    assert_int_equal(job_submit(dir, NULL, entry), 0);
}

/* An actor whose library is in the package, on node 1. */
static void test_actor_from_package(void **state)
{
    (void)state;
    need_cluster();
    char dir[400];
    make_job_dir("actor", dir, sizeof dir);
    esc_client *cl = h_connect(&C, "actor", 0, false);
    esc_status st;
    assert_int_equal(esc_job_package(cl, dir, NULL, &st), ESC_OK);
    esc_actor_spec spec = {.name = "counter", .library = "lib/libmytasks.so",
                           .init_symbol = "counter_init", .resources = ON_B, .nresources = 1};
    esc_actor *a;
    assert_int_equal(esc_actor_create(cl, &spec, &a, &st), ESC_OK);
    esc_task_arg arg = {.data = "5", .len = 1};
    esc_ref *r;
    char *v = NULL;
    for (int i = 1; i <= 2; i++) {
        assert_int_equal(esc_actor_call(cl, a, "counter_add", &arg, 1, 1, &r, &st), ESC_OK);
        assert_int_equal(get(cl, r, &v, &st), ESC_OK);
        assert_int_equal(atoi(v), 5 * i);
        free(v);
    }
    esc_actor_free(a);
    esc_disconnect(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_b_cannot_see_src),
        cmocka_unit_test(test_package_runs_on_hidden_node),
        cmocka_unit_test(test_shared_package),
        cmocka_unit_test(test_hash_mismatch_refused),
        cmocka_unit_test(test_missing_package),
        cmocka_unit_test(test_member_escaping_refused),
        cmocka_unit_test(test_library_stays_inside),
        cmocka_unit_test(test_job_submit_entrypoint_on_hidden_node),
        cmocka_unit_test(test_job_submit_tasks_on_hidden_node),
        cmocka_unit_test(test_actor_from_package),
    };
    int failed = cmocka_run_group_tests(tests, setup, h_teardown);
    return failed || h_unclean_exits() ? 1 : 0; /* daemons exit 0: under ASan, no leak */
}
