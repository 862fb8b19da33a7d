/* presets.c — lookup over the preset files that scripts/embed.cmake compiled into the
 * library (see include/etkit/presets.h). */
#include <string.h>

#include "etkit/presets.h"

extern const etk_embedded etk_embedded_files[];

const etk_embedded *etk_preset_files(void) { return etk_embedded_files; }

const etk_embedded *etk_preset_file(const char *relpath)
{
    for (const etk_embedded *e = etk_embedded_files; e->name; e++)
        if (strcmp(e->name, relpath) == 0)
            return e;
    return NULL;
}
