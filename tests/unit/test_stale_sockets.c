/* test_stale_sockets.c: esc_remove_stale_sockets (runtime/stale_sockets.c) removes the
 * raylet-<pid>.sock sockets whose pid is gone, and nothing else: not a live pid's, not
 * a file of another name or kind. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "stale_sockets.h"

static char dir[64];

/* A pid that no process has: a child of ours, reaped. */
static pid_t gone_pid(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return pid;
}

static void path_of(const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* A socket file, as a raylet killed while listening leaves behind. */
static void make_socket(const char *name)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char path[128];
    path_of(name, path, sizeof path);
    assert_true(strlen(path) < sizeof a.sun_path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    close(fd);
}

static void make_file(const char *name)
{
    char path[128];
    path_of(name, path, sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

static bool present(const char *name)
{
    char path[128];
    struct stat st;
    path_of(name, path, sizeof path);
    return lstat(path, &st) == 0;
}

static void test_only_stale_sockets_go(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/escher-test-sockets-XXXXXX");
    assert_non_null(mkdtemp(dir));
    char dead[64], dead_file[64], live[64], parent[64];
    pid_t gone = gone_pid();
    snprintf(dead, sizeof dead, "raylet-%d.sock", (int)gone);
    snprintf(dead_file, sizeof dead_file, "raylet-%d.sock", (int)gone_pid());
    snprintf(live, sizeof live, "raylet-%d.sock", (int)getpid());
    snprintf(parent, sizeof parent, "raylet-%d.sock", (int)getppid());
    make_socket(dead);
    make_file(dead_file);         /* not a socket: not ours to judge */
    make_socket(live);            /* this process */
    make_socket(parent);          /* another live process */
    make_socket("raylet-x.sock"); /* another name */
    make_socket("raylet-01.sock");
    char other[64];
    snprintf(other, sizeof other, "worker-%d.sock", (int)gone);
    make_socket(other);

    assert_int_equal(esc_remove_stale_sockets(dir), 1);
    assert_false(present(dead));
    assert_true(present(dead_file));
    assert_true(present(live));
    assert_true(present(parent));
    assert_true(present("raylet-x.sock"));
    assert_true(present("raylet-01.sock"));
    assert_true(present(other));
    assert_int_equal(esc_remove_stale_sockets(dir), 0); /* nothing left to remove */

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(esc_remove_stale_sockets(dir), 0); /* no directory: nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_stale_sockets_go),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
