/* utf8.h: UTF-8 checks for text that crosses the protocol.
 *
 * Protobuf `string` fields must hold UTF-8, but protobuf-c packs and unpacks any bytes.
 * A string the GCS stores and later echoes back (a job's entrypoint, a KV key, a label)
 * would then break every client whose protobuf library decodes strictly (Python's,
 * Go's), long after the write that put it there. So servers check requests at the edge
 * and clients clean what they read from the system (a command line) before sending. */
#ifndef ESC_UTF8_H
#define ESC_UTF8_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* True when s[0..len) is well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
bool esc_utf8_valid(const char *s, size_t len);

/* The longest prefix of the NUL-terminated s of at most max bytes that does not end
 * inside a character: where to cut valid UTF-8 so that it stays valid. */
size_t esc_utf8_prefix(const char *s, size_t max);

/* Replaces, in place, each byte of the NUL-terminated s that is not part of a
 * well-formed character with '?'. Returns how many were replaced. */
size_t esc_utf8_sanitize(char *s);

/* True when every string field of m, in nested and repeated messages too, is valid
 * UTF-8. Otherwise false, with the field's path into why ("RegisterJobRequest.entrypoint
 * is not valid UTF-8"; why may be NULL). */
bool esc_pb_utf8_valid(const ProtobufCMessage *m, char *why, size_t len);

#endif
