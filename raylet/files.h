/* files.h: files written atomically (files.c). */
#ifndef RAYLET_FILES_H
#define RAYLET_FILES_H

#include <stddef.h>

/* Writes content to path atomically (temp file in the same folder, then rename), so
 * readers never see a partial file. Returns 0 or -1 with errno set. */
int files_write_atomic(const char *path, const char *content);

#endif
