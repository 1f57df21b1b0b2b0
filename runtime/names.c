/* names.c: validation of resource names and namespaces, and physical-name rules. */
#include "names.h"

#include <string.h>

#include "ids.h"

/* strnlen is POSIX, not C11; the bound keeps an overlong string from being read whole. */
static size_t bounded_len(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n] != '\0')
        n++;
    return n;
}

static bool name_char_ok(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* Validates the first len bytes of s, so split can check a part in place. */
static bool part_valid(const char *s, size_t len)
{
    if (len == 0 || len > ESC_NAME_MAX || s[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char_ok(s[i]))
            return false;
    return true;
}

bool esc_name_valid(const char *s)
{
    if (s == NULL)
        return false;
    size_t len = bounded_len(s, ESC_NAME_MAX + 1);
    return part_valid(s, len);
}

bool esc_object_id_valid(const char *s)
{
    if (s == NULL || s[0] == '.')
        return false;
    size_t len = bounded_len(s, ESC_OBJECT_ID_MAX);
    if (len == 0 || len >= ESC_OBJECT_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char_ok(s[i]))
            return false;
    return true;
}

bool esc_name_is_physical(const char *s)
{
    static const char *const fixed[] = {"CPU", "GPU", "memory", "object_store_memory"};
    if (s == NULL)
        return false;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (strcmp(s, fixed[i]) == 0)
            return true;
    return strncmp(s, "node:", 5) == 0;
}

int esc_name_join(const char *ns, const char *name, char *out, size_t outlen)
{
    if (!esc_name_valid(ns) || !esc_name_valid(name) || out == NULL)
        return -1;
    size_t nl = strlen(ns), ml = strlen(name);
    if (nl + 1 + ml + 1 > outlen)
        return -1;
    memcpy(out, ns, nl);
    out[nl] = '/';
    memcpy(out + nl + 1, name, ml + 1);
    return 0;
}

int esc_name_split(const char *full, char *ns, char *name)
{
    if (full == NULL || ns == NULL || name == NULL)
        return -1;
    const char *slash = strchr(full, '/');
    if (slash == NULL)
        return -1;
    size_t nl = (size_t)(slash - full);
    const char *rest = slash + 1;
    /* '/' is not a name character, so a second slash fails part_valid. */
    size_t ml = bounded_len(rest, ESC_NAME_MAX + 1);
    if (!part_valid(full, nl) || !part_valid(rest, ml))
        return -1;
    memcpy(ns, full, nl);
    ns[nl] = '\0';
    memcpy(name, rest, ml);
    name[ml] = '\0';
    return 0;
}
