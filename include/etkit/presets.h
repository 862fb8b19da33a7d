/* etkit/presets.h — files under presets/ embedded into the binary at build time
 * (scripts/embed.cmake), so built-in models, GPUs and clusters are data, not C code. */
#ifndef ETKIT_PRESETS_H
#define ETKIT_PRESETS_H
#include <stddef.h>

typedef struct etk_embedded {
    const char *name;            /* path relative to presets/, e.g. "clusters/dgx-h100.yaml" */
    const unsigned char *data;   /* NUL-terminated */
    size_t len;
} etk_embedded;

/* The embedded file with that relative path, or NULL. */
const etk_embedded *etk_preset_file(const char *relpath);
/* All embedded files, terminated by an entry whose name is NULL. */
const etk_embedded *etk_preset_files(void);
#endif
