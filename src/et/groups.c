/* groups.c — communicator groups: the comm-group JSON that accompanies per-rank traces,
 * {"<group id>": [rank, ...], ...} (nodes name a group by attribute pg_name; "" or "0" = all
 * ranks). Parsed with jansson; every error names the file, the key and what was expected. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/et.h"

etk_groups *etk_groups_new(void)
{
    etk_groups *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->arena = etk_arena_new(0);
    if (!g->arena) {
        free(g);
        return NULL;
    }
    return g;
}

void etk_groups_free(etk_groups *g)
{
    if (!g)
        return;
    etk_arena_free(g->arena);
    free(g->groups);
    free(g);
}

int etk_groups_add(etk_groups *g, const char *id, const uint32_t *ranks, uint32_t n)
{
    if (g->n_groups == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 16;
        etk_group *ng = realloc(g->groups, nc * sizeof *ng);
        if (!ng)
            return ETK_ENOMEM;
        g->groups = ng;
        g->cap = nc;
    }
    etk_group *e = &g->groups[g->n_groups];
    e->id = etk_arena_strdup(g->arena, id);
    e->n_ranks = n;
    e->ranks = n ? etk_arena_memdup(g->arena, ranks, n * sizeof *ranks) : NULL;
    if (!e->id || (n && !e->ranks))
        return ETK_ENOMEM;
    g->n_groups++;
    return 0;
}

const etk_group *etk_groups_find(const etk_groups *g, const char *id)
{
    if (!g)
        return NULL;
    for (size_t i = 0; i < g->n_groups; i++)
        if (!strcmp(g->groups[i].id, id))
            return &g->groups[i];
    return NULL;
}

int etk_groups_parse(const char *json, size_t len, const char *name, etk_groups **out,
                     etk_error *err)
{
    *out = NULL;
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return etk_err(err, ETK_EFORMAT, "%s: line %d, column %d: invalid JSON: %s", name,
                       je.line, je.column, je.text);
    int rc = 0;
    etk_groups *g = NULL;
    uint32_t *tmp = NULL;
    if (!json_is_object(root)) {
        rc = etk_err(err, ETK_EFORMAT,
                     "%s: expected a JSON object {\"<group id>\": [rank, ...], ...}", name);
        goto done;
    }
    if (!(g = etk_groups_new())) {
        rc = etk_err(err, ETK_ENOMEM, "%s: out of memory", name);
        goto done;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        if (!json_is_array(val)) {
            rc = etk_err(err, ETK_EFORMAT, "%s: group \"%s\": expected an array of ranks", name, key);
            goto done;
        }
        size_t n = json_array_size(val);
        if (n > UINT32_MAX) {
            rc = etk_err(err, ETK_EFORMAT, "%s: group \"%s\": too many ranks", name, key);
            goto done;
        }
        free(tmp);
        tmp = malloc((n ? n : 1) * sizeof *tmp);
        if (!tmp) {
            rc = etk_err(err, ETK_ENOMEM, "%s: out of memory", name);
            goto done;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *r = json_array_get(val, i);
            if (!json_is_integer(r) || json_integer_value(r) < 0 ||
                json_integer_value(r) > (json_int_t)UINT32_MAX - 1) {
                rc = etk_err(err, ETK_EFORMAT,
                             "%s: group \"%s\", element %zu: expected a rank (integer >= 0)",
                             name, key, i);
                goto done;
            }
            tmp[i] = (uint32_t)json_integer_value(r);
            for (size_t j = 0; j < i; j++)
                if (tmp[j] == tmp[i] && n < 4096) {
                    rc = etk_err(err, ETK_EFORMAT, "%s: group \"%s\": rank %u listed twice", name,
                                 key, tmp[i]);
                    goto done;
                }
        }
        if (etk_groups_add(g, key, tmp, (uint32_t)n) != 0) {
            rc = etk_err(err, ETK_ENOMEM, "%s: out of memory", name);
            goto done;
        }
    }
done:
    free(tmp);
    json_decref(root);
    if (rc) {
        etk_groups_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

int etk_groups_read(const char *path, etk_groups **out, etk_error *err)
{
    char *data;
    size_t len;
    int rc = etk_file_read_max(path, (size_t)256 << 20, "comm-group JSON file", &data, &len, err);
    if (rc)
        return rc;
    rc = etk_groups_parse(data, len, path, out, err);
    free(data);
    return rc;
}

int etk_groups_write(const etk_groups *g, const char *path, etk_error *err)
{
    /* written by hand (not json_dumps) to keep one group per line and stream large files */
    char *tmp;
    FILE *f = etk_file_begin(path, &tmp, err);
    if (!f)
        return err ? err->code : ETK_EIO;
    fputs("{", f);
    for (size_t i = 0; i < g->n_groups; i++) {
        const etk_group *e = &g->groups[i];
        json_t *k = json_string(e->id);
        char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
        json_decref(k);
        if (!ks) {
            etk_file_abort(f, tmp);
            return etk_err(err, ETK_EINVAL, "%s: group id is not valid UTF-8", path);
        }
        fprintf(f, "%s\n  %s: [", i ? "," : "", ks);
        free(ks);
        for (uint32_t j = 0; j < e->n_ranks; j++)
            fprintf(f, j ? ", %u" : "%u", e->ranks[j]);
        fputs("]", f);
    }
    fputs(g->n_groups ? "\n}\n" : "}\n", f);
    return etk_file_commit(f, tmp, path, err);
}
