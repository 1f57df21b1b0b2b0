/* fuzz_cluster_file.c: the cluster file of `escher up/down/exec/attach`
 * (client/cli/cluster_file.c, YAML through libyaml), read by path as the CLI does, from
 * a memfd. What loads has a name, a head host first, and within-limit host counts. */
#include "fuzz_util.h"

#include "cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfd(data, size, path, sizeof path);
    cl_cluster c;
    if (cl_load(path, &c) == 0) {
        FUZZ_CHECK(c.name && c.nhosts >= 1 && c.nhosts <= CL_MAX_HOSTS);
        for (size_t i = 0; i < c.nhosts; i++)
            FUZZ_CHECK(c.hosts[i].address && c.hosts[i].address[0]);
        FUZZ_CHECK(c.prefix && c.storage && c.session_dir);
        cl_free(&c);
    }
    close(fd);
    return 0;
}
