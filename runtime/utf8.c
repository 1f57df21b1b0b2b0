/* utf8.c: see utf8.h. */
#include "utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Length of the well-formed character at s (n bytes left), 0 when there is none. The
 * second byte's range is what excludes overlong forms (E0, F0), surrogates (ED) and
 * code points above U+10FFFF (F4); C0, C1 and F5..FF never start a character. */
static size_t char_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : lo;
        hi = c == 0xED ? 0x9F : hi;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : lo;
        hi = c == 0xF4 ? 0x8F : hi;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

bool esc_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t k = char_len(p + i, len - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

size_t esc_utf8_prefix(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    if (n < max)
        return n;
    /* Back up over continuation bytes to the start of the last character; keep it
     * when it ends within max. */
    size_t start = n;
    while (start > 0 && n - start < 4 && ((unsigned char)s[start - 1] & 0xC0) == 0x80)
        start--;
    if (start == 0)
        return n;
    size_t last = start - 1;
    size_t k = char_len((const unsigned char *)s + last, n - last);
    return k == n - last ? n : last;
}

size_t esc_utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    size_t n = strlen(s), replaced = 0;
    for (size_t i = 0; i < n;) {
        size_t k = char_len(p + i, n - i);
        if (k == 0) {
            p[i++] = '?';
            replaced++;
        } else {
            i += k;
        }
    }
    return replaced;
}

/* ------------------------------------------------------------------ messages */

static bool check_message(const ProtobufCMessage *m, char *path, size_t len);

static bool check_string(const char *s, char *path, size_t len, const char *name)
{
    if (!s || esc_utf8_valid(s, strlen(s)))
        return true;
    size_t used = strlen(path);
    snprintf(path + used, len - used, ".%s", name);
    return false;
}

static bool check_sub(const ProtobufCMessage *sub, char *path, size_t len, const char *name)
{
    if (!sub)
        return true;
    size_t used = strlen(path);
    snprintf(path + used, len - used, ".%s", name);
    /* The nested message names its own type; keep only the field path. */
    char inner[256] = "";
    if (check_message(sub, inner, sizeof inner)) {
        path[used] = '\0';
        return true;
    }
    size_t now = strlen(path);
    snprintf(path + now, len - now, "%s", inner);
    return false;
}

/* Is field f of m set at all? Only a oneof member needs a look: the others are
 * checked whatever their value (an unset string is "" or NULL). */
static bool field_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
        return true;
    const uint32_t *which = (const uint32_t *)((const char *)m + f->quantifier_offset);
    return *which == f->id;
}

static bool check_field(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                        char *path, size_t len)
{
    if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
        return true;
    if (!field_present(m, f))
        return true;
    const void *member = (const char *)m + f->offset;
    size_t count = 1;
    const void *const *items = member;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        count = *(const size_t *)((const char *)m + f->quantifier_offset);
        items = *(const void *const *const *)member;
    }
    for (size_t i = 0; i < count && items; i++) {
        bool ok = f->type == PROTOBUF_C_TYPE_STRING
                      ? check_string(items[i], path, len, f->name)
                      : check_sub(items[i], path, len, f->name);
        if (!ok)
            return false;
    }
    return true;
}

/* Appends the failing field's path to path (which holds the message's own). */
static bool check_message(const ProtobufCMessage *m, char *path, size_t len)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++)
        if (!check_field(m, &d->fields[i], path, len))
            return false;
    return true;
}

bool esc_pb_utf8_valid(const ProtobufCMessage *m, char *why, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s", m->descriptor->short_name);
    if (check_message(m, path, sizeof path))
        return true;
    if (why && len)
        snprintf(why, len, "%s is not valid UTF-8", path);
    return false;
}
