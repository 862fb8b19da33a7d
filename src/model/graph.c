/* graph.c — the block graph of a model (model/graph.h): presets/models/blocks/<arch>.yaml loaded
 * with every dimension evaluated from the model's symbols (a small expression language: integers,
 * model symbols, + - * / and parentheses, exact or refused). Split from model.c, which reads the
 * model files themselves. */
#include <ctype.h>
#include <stddef.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etkit/presets.h"
#include "model/graph.h"
#include "model/yamljson.h"
#include "util/check.h"

/* ---------- dimension expressions: integers, model symbols, + - * / ( ) ---------- */

typedef struct {
    const char *s, *p;
    const etk_model *m;
    int64_t batch;
    const char *where;
    etk_error *err;
    int rc;
} expr;

static int64_t e_sum(expr *e);

static void e_skip(expr *e)
{
    while (*e->p == ' ')
        e->p++;
}

static int64_t e_fail(expr *e, const char *what)
{
    if (!e->rc)
        e->rc = etk_err(e->err, ETK_EFORMAT, "%s: expression '%s' at offset %d: %s", e->where, e->s,
                        (int)(e->p - e->s), what);
    return 0;
}

static int64_t e_atom(expr *e)
{
    e_skip(e);
    if (*e->p == '(') {
        e->p++;
        int64_t v = e_sum(e);
        e_skip(e);
        if (*e->p != ')')
            return e_fail(e, "expected ')'");
        e->p++;
        return v;
    }
    if (isdigit((unsigned char)*e->p)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*e->p))
            if (!etk_mul_i64(v, 10, &v) || !etk_add_i64(v, *e->p++ - '0', &v))
                return e_fail(e, "number out of the 64-bit range");
        return v;
    }
    const char *b = e->p;
    while (isalnum((unsigned char)*e->p) || *e->p == '_')
        e->p++;
    size_t n = (size_t)(e->p - b);
    static const char *names[] = {"batch", "seq", "hidden", "heads", "kv_heads", "ffn", "vocab", "layers", "head_dim",
                                  "experts", "topk", "shared_experts", "moe_ffn", "capacity", "q_lora",
                                  "kv_lora", "qk_nope", "qk_rope", "v_head"};
    const etk_model *m = e->m;
    int64_t vals[] = {e->batch, m->seq, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->layers,
                      m->head_dim ? m->head_dim : m->hidden / m->heads,
                      m->experts, m->topk, m->shared_experts, m->moe_ffn, etk_model_capacity(m, e->batch),
                      m->q_lora, m->kv_lora, m->qk_nope, m->qk_rope, m->v_head};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (n == strlen(names[i]) && !strncmp(b, names[i], n))
            return vals[i];
    return e_fail(e, "expected a number, a model symbol (batch seq hidden heads kv_heads ffn vocab "
                     "layers head_dim experts topk shared_experts moe_ffn capacity q_lora kv_lora qk_nope qk_rope "
                     "v_head) or '('");
}

static int64_t e_prod(expr *e)
{
    int64_t v = e_atom(e);
    for (;;) {
        e_skip(e);
        char op = *e->p;
        if (op != '*' && op != '/')
            return v;
        e->p++;
        int64_t r = e_atom(e);
        if (op == '*') {
            if (!etk_mul_i64(v, r, &v))
                return e_fail(e, "the product overflows 64 bits for this model (dimensions too large)");
        } else if (r == 0 || v % r)
            return e_fail(e, "division is not exact for this model");
        else
            v /= r;
    }
}

static int64_t e_sum(expr *e)
{
    int64_t v = e_prod(e);
    for (;;) {
        e_skip(e);
        char op = *e->p;
        if (op != '+' && op != '-')
            return v;
        e->p++;
        int64_t r = e_prod(e);
        if (op == '+' ? !etk_add_i64(v, r, &v) : !etk_add_i64(v, -r, &v))
            return e_fail(e, "the sum overflows 64 bits for this model (dimensions too large)");
    }
}

static int eval_expr(const char *s, const etk_model *m, int64_t batch, const char *where, int64_t *out,
                     etk_error *err)
{
    expr e = {s, s, m, batch, where, err, 0};
    int64_t v = e_sum(&e);
    e_skip(&e);
    if (!e.rc && *e.p)
        e_fail(&e, "unexpected character");
    if (!e.rc && v <= 0)
        e.rc = etk_err(err, ETK_EINVAL, "%s: expression '%s' is %" PRId64 " for model %s (must be positive)",
                       where, s, v, m->name);
    *out = v;
    return e.rc;
}

/* ---------- block graph ---------- */

int64_t etk_graph_elems(const etk_graph *g, int i)
{
    int64_t n = 1;
    for (int k = 0; k < g->t[i].nd; k++)
        n *= g->dim[g->t[i].dims[k]];
    return n;
}

static const struct {
    const char *name;
    uint32_t bit;
} rmods[] = {{"mla_up_proj", G_RMOD_MLA_UP_PROJ}, {"mlp", G_RMOD_MLP}, {"moe_act", G_RMOD_MOE_ACT}};

uint32_t etk_graph_rmod_bit(const char *name)
{
    for (size_t i = 0; name && i < sizeof rmods / sizeof rmods[0]; i++)
        if (!strcmp(name, rmods[i].name))
            return rmods[i].bit;
    return 0;
}

const char *etk_graph_rmod_name(uint32_t b)
{
    for (size_t i = 0; i < sizeof rmods / sizeof rmods[0]; i++)
        if (rmods[i].bit == b)
            return rmods[i].name;
    return NULL;
}

static const char *sec_names[G_N_SEC_ALL] = {"embed", "layer", "head", "dense_layer", "decode_layer",
                                             "decode_dense_layer"};

typedef struct {
    etk_graph *g;
    const char *file;
    etk_error *err;
    const etk_model *m;
    int64_t batch;
} loader;

static int parse_dims(loader *L, const char *s, const char *where, int *dims, int *nd)
{
    size_t n = s ? strlen(s) : 0;
    if (!s || n == 0 || n > G_MAX_RANK)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: expected 1 to %d dimension letters", L->file, where,
                       G_MAX_RANK);
    for (size_t i = 0; i < n; i++) {
        int c = s[i] - 'a';
        if (c < 0 || c >= G_MAX_DIMS || !L->g->dim[c])
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: dimension '%c' is not declared under dims", L->file,
                           where, s[i]);
        dims[i] = c;
    }
    *nd = (int)n;
    return 0;
}

static int find_tensor(const etk_graph *g, int sec, const char *name)
{
    char q[128];
    if (strchr(name, '.'))
        snprintf(q, sizeof q, "%s", name);
    else
        snprintf(q, sizeof q, "%s.%s", sec_names[sec], name);
    for (int i = g->nt - 1; i >= 0; i--)
        if (!strcmp(g->t[i].name, q))
            return i;
    return -1;
}

static int add_tensor(loader *L, int sec, const char *name, const int *dims, int nd, bool weight, int split)
{
    etk_graph *g = L->g;
    char q[128];
    snprintf(q, sizeof q, "%s.%s", sec_names[sec], name);
    if (g->nt >= G_MAX_TENSORS || find_tensor(g, sec, name) >= 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: tensor '%s' is defined twice (or more than %d tensors)",
                       L->file, q, G_MAX_TENSORS) < 0 ? -1 : -1;
    gtensor *t = &g->t[g->nt];
    t->name = etk_arena_strdup(g->arena, q);
    t->section = sec;
    t->nd = nd;
    memcpy(t->dims, dims, sizeof(int) * (size_t)nd);
    t->weight = weight;
    t->split = split;
    return g->nt++;
}

/* Output dims of a matmul from its einsum "ab,bc->ac", checking the operands' dims. */
static int parse_eq(loader *L, const char *where, const char *eq, gop *op, int *dims, int *nd)
{
    const char *arrow = eq ? strstr(eq, "->") : NULL;
    const char *comma = eq ? strchr(eq, ',') : NULL;
    if (!arrow || !comma || comma > arrow || op->nin != 2)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: matmul needs two inputs and eq \"<a>,<b>-><out>\"",
                       L->file, where);
    const char *parts[2] = {eq, comma + 1};
    size_t lens[2] = {(size_t)(comma - eq), (size_t)(arrow - comma - 1)};
    for (int i = 0; i < 2; i++) {
        const gtensor *t = &L->g->t[op->in[i]];
        bool ok = lens[i] == (size_t)t->nd;
        /* eq letters label the operand's dims; a different letter of the same size is a
         * relabeling (keys use t for the sequence position of the attended tokens) */
        for (int k = 0; ok && k < t->nd; k++) {
            int l = parts[i][k] - 'a';
            ok = l >= 0 && l < G_MAX_DIMS && L->g->dim[l] == L->g->dim[t->dims[k]];
            if (ok)
                op->eq[i][k] = l;
        }
        op->eqn[i] = t->nd;
        if (!ok)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: operand %d (%s) does not have the dims of eq '%s'",
                           L->file, where, i + 1, t->name, eq);
    }
    return parse_dims(L, arrow + 2, where, dims, nd);
}

static int load_op(loader *L, int sec, json_t *jo, size_t idx, gop *op)
{
    etk_graph *g = L->g;
    char where[160];
    const char *name = json_string_value(json_object_get(jo, "name"));
    snprintf(where, sizeof where, "sections.%s.ops[%zu]%s%s", sec_names[sec], idx, name ? " " : "",
             name ? name : "");
    if (!name)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: missing 'name'", L->file, where);
    op->name = etk_arena_strdup(g->arena, name);
    const char *kind = json_string_value(json_object_get(jo, "op"));
    static const char *kinds[] = {"matmul", "elementwise", "norm", "softmax", "dropout", "embedding", "loss"};
    op->kind = -1;
    for (int k = 0; kind && k < 7; k++)
        if (!strcmp(kind, kinds[k]))
            op->kind = k;
    if (op->kind < 0)
        return etk_err(L->err, ETK_EFORMAT,
                       "%s: %s: 'op' must be one of matmul elementwise norm softmax dropout embedding loss",
                       L->file, where);
    json_t *in = json_object_get(jo, "in");
    if (!json_is_array(in) || json_array_size(in) == 0 || json_array_size(in) > G_MAX_IN)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'in' must list 1 to %d tensors", L->file, where, G_MAX_IN);
    op->nin = (int)json_array_size(in);
    for (int i = 0; i < op->nin; i++) {
        const char *tn = json_string_value(json_array_get(in, (size_t)i));
        op->in[i] = tn ? find_tensor(g, sec, tn) : -1;
        if (op->in[i] < 0)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: input '%s' is not defined before this op", L->file,
                           where, tn ? tn : "?");
    }
    op->bias = -1;
    const char *bias = json_string_value(json_object_get(jo, "bias"));
    if (bias && (op->bias = find_tensor(g, sec, bias)) < 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: bias '%s' is not a declared weight", L->file, where, bias);
    op->over = -1;
    const char *over = json_string_value(json_object_get(jo, "over"));
    if (over) {
        int d[G_MAX_RANK], nd;
        if (parse_dims(L, over, where, d, &nd))
            return L->err->code;
        op->over = d[0];
    }
    json_t *fl = json_object_get(jo, "flops");
    op->flops = fl ? json_number_value(fl) : (op->kind == G_DROPOUT ? 1 : 0);
    if (json_is_string(fl)) { /* an expression over the model symbols ("2 * topk") */
        char w2[200];
        int64_t v;
        snprintf(w2, sizeof w2, "%s: %s.flops", L->file, where);
        if (eval_expr(json_string_value(fl), L->m, L->batch, w2, &v, L->err))
            return L->err->code;
        op->flops = (double)v;
    }
    json_t *bw = json_object_get(jo, "bwd");
    op->bwd = bw ? json_number_value(bw) : (op->kind == G_DROPOUT ? 1 : 2);
    op->region = json_object_get(jo, "region") != NULL;
    json_t *rm = json_object_get(jo, "recompute");
    if (rm && !(json_is_string(rm) && (op->rmod = etk_graph_rmod_bit(json_string_value(rm)))))
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'recompute' must name a recompute module (%s)", L->file,
                       where, G_RMOD_NAMES);
    json_t *skv = json_object_get(jo, "shared_kv");
    if (skv && (!json_is_boolean(skv) || op->kind != G_MATMUL))
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'shared_kv' must be true or false, on a matmul", L->file, where);
    op->shared_kv = skv && json_is_true(skv);
    op->reductions = (int)json_integer_value(json_object_get(jo, "reductions"));
    /* output tensor */
    int dims[G_MAX_RANK], nd = 0;
    const char *ds = json_string_value(json_object_get(jo, "dims"));
    if (op->kind == G_MATMUL) {
        if (parse_eq(L, where, json_string_value(json_object_get(jo, "eq")), op, dims, &nd))
            return L->err->code;
    } else if (op->kind == G_EMBEDDING) {
        /* tokens [b,s] x table [v,h] -> [b,s,h] */
        const gtensor *tok = &g->t[op->in[0]], *tab = op->nin > 1 ? &g->t[op->in[1]] : NULL;
        if (!tab || !tab->weight || tab->nd != 2 || tok->nd < 1)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: embedding needs [tokens, table[vocab,hidden]]",
                           L->file, where);
        nd = tok->nd + 1;
        memcpy(dims, tok->dims, sizeof(int) * (size_t)tok->nd);
        dims[tok->nd] = tab->dims[1];
    } else if (ds) {
        if (parse_dims(L, ds, where, dims, &nd))
            return L->err->code;
    } else {
        const gtensor *t0 = &g->t[op->in[0]];
        nd = t0->nd;
        memcpy(dims, t0->dims, sizeof(int) * (size_t)nd);
    }
    const char *out = json_string_value(json_object_get(jo, "out"));
    if (!out)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: missing 'out'", L->file, where);
    op->out = add_tensor(L, sec, out, dims, nd, false, -1);
    if (op->out < 0)
        return L->err->code;
    /* saved tensors */
    json_t *sv = json_object_get(jo, "save");
    if (sv && (!json_is_array(sv) || json_array_size(sv) > G_MAX_SAVE))
        return etk_err(L->err, ETK_EFORMAT, "%s: %s: 'save' must list at most %d tensors", L->file, where,
                       G_MAX_SAVE);
    for (size_t i = 0; sv && i < json_array_size(sv); i++) {
        const char *s = json_string_value(json_array_get(sv, i));
        char nm[64];
        int bytes = 0;
        const char *colon = s ? strchr(s, ':') : NULL;
        snprintf(nm, sizeof nm, "%.*s", colon ? (int)(colon - s) : (int)(s ? strlen(s) : 0), s ? s : "");
        if (colon)
            bytes = atoi(colon + 1);
        int ti = find_tensor(g, sec, nm);
        if (ti < 0)
            return etk_err(L->err, ETK_EFORMAT, "%s: %s: saved tensor '%s' is not defined", L->file, where, nm);
        op->save[op->nsave] = ti;
        op->save_bytes[op->nsave++] = bytes;
    }
    return 0;
}

static int load_section(loader *L, int sec, json_t *js)
{
    etk_graph *g = L->g;
    gsection *S = (gsection *)etk_graph_section(g, sec);
    S->name = sec_names[sec];
    char where[96];
    snprintf(where, sizeof where, "sections.%s", sec_names[sec]);
    if (!json_is_object(js))
        return etk_err(L->err, ETK_EFORMAT, "%s: missing mapping '%s'", L->file, where);
    json_t *in = json_object_get(js, "input");
    const char *iname = json_string_value(json_object_get(in, "name"));
    if (!iname)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s.input: missing 'name'", L->file, where);
    int dims[G_MAX_RANK], nd = g->stream_nd;
    memcpy(dims, g->stream, sizeof dims);
    const char *ids = json_string_value(json_object_get(in, "dims"));
    if (ids && parse_dims(L, ids, where, dims, &nd))
        return L->err->code;
    S->input = add_tensor(L, sec, iname, dims, nd, false, -1);
    if (S->input < 0)
        return L->err->code;
    json_t *ws = json_object_get(js, "weights");
    const char *wk;
    json_t *wv;
    json_object_foreach(ws, wk, wv) {
        char w2[160];
        snprintf(w2, sizeof w2, "%s.weights.%s", where, wk);
        if (parse_dims(L, json_string_value(json_object_get(wv, "dims")), w2, dims, &nd))
            return L->err->code;
        int split = -1;
        const char *sp = json_string_value(json_object_get(wv, "split"));
        if (sp) {
            split = sp[0] - 'a';
            bool found = false;
            for (int k = 0; k < nd; k++)
                found |= dims[k] == split;
            if (strlen(sp) != 1 || !found)
                return etk_err(L->err, ETK_EFORMAT, "%s: %s: split '%s' is not one of its dims", L->file, w2, sp);
        }
        if (add_tensor(L, sec, wk, dims, nd, true, split) < 0)
            return L->err->code;
    }
    json_t *ops = json_object_get(js, "ops");
    if (!json_is_array(ops) || json_array_size(ops) == 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s.ops: expected a list of ops", L->file, where);
    S->nops = (int)json_array_size(ops);
    S->ops = etk_arena_alloc(g->arena, sizeof(gop) * (size_t)S->nops);
    for (int i = 0; i < S->nops; i++)
        if (load_op(L, sec, json_array_get(ops, (size_t)i), (size_t)i, &S->ops[i]))
            return L->err->code;
    const char *out = json_string_value(json_object_get(js, "output"));
    S->output = out ? find_tensor(g, sec, out) : -1;
    if (S->output < 0)
        return etk_err(L->err, ETK_EFORMAT, "%s: %s.output: expected the name of an op output", L->file, where);
    return 0;
}

/* Section sec declares the weights of section of (names, dims and splits), in any order. */
static int same_weights(loader *L, int sec, int of)
{
    const etk_graph *g = L->g;
    int n[2] = {0, 0};
    for (int i = 0; i < g->nt; i++) {
        const gtensor *t = &g->t[i];
        if (!t->weight || (t->section != sec && t->section != of))
            continue;
        n[t->section == of]++;
        if (t->section != sec)
            continue;
        int k = find_tensor(g, of, strchr(t->name, '.') + 1);
        const gtensor *u = k >= 0 ? &g->t[k] : NULL;
        if (!u || !u->weight || u->nd != t->nd || u->split != t->split ||
            memcmp(u->dims, t->dims, sizeof(int) * (size_t)t->nd))
            return etk_err(L->err, ETK_EFORMAT, "%s: sections.%s.weights.%s: not a weight of %s with the same dims "
                           "and split (a decode section computes the same layer)", L->file, sec_names[sec],
                           strchr(t->name, '.') + 1, sec_names[of]);
    }
    if (n[0] != n[1])
        return etk_err(L->err, ETK_EFORMAT, "%s: sections.%s declares %d weights, %s %d (a decode section "
                       "computes the same layer with the same weights)", L->file, sec_names[sec], n[0],
                       sec_names[of], n[1]);
    return 0;
}

/* Tied embeddings: the head's weight with the embedding table's dims (its output layer) is
 * dropped and the head's ops read the table ("embed.<name>") instead, as blocks/gpt.yaml writes
 * it; nothing to do when the head already reads the table. */
static int tie_head(const char *file, json_t *secs, etk_error *err)
{
    json_t *embed = json_object_get(secs, "embed"), *head = json_object_get(secs, "head");
    const char *table = NULL;
    size_t i;
    json_t *op;
    json_array_foreach(json_object_get(embed, "ops"), i, op)
        if (!table && !strcmp(json_string_value(json_object_get(op, "op")) ? json_string_value(json_object_get(op, "op")) : "",
                              "embedding"))
            table = json_string_value(json_array_get(json_object_get(op, "in"), 1));
    json_t *tw = table ? json_object_get(json_object_get(embed, "weights"), table) : NULL;
    const char *tdims = json_string_value(json_object_get(tw, "dims"));
    if (!tdims)
        return etk_err(err, ETK_EFORMAT, "%s: tied embeddings: sections.embed has no embedding op with a table weight",
                       file);
    json_t *hw = json_object_get(head, "weights");
    const char *wk;
    char out_w[64] = "";
    json_t *wv;
    json_object_foreach(hw, wk, wv) {
        const char *d = json_string_value(json_object_get(wv, "dims"));
        if (!out_w[0] && d && !strcmp(d, tdims))
            snprintf(out_w, sizeof out_w, "%s", wk);
    }
    if (!out_w[0])
        return 0; /* the head reads the table already (gpt) */
    char ref[96];
    snprintf(ref, sizeof ref, "embed.%s", table);
    json_array_foreach(json_object_get(head, "ops"), i, op) {
        json_t *in = json_object_get(op, "in");
        for (size_t k = 0; k < json_array_size(in); k++)
            if (!strcmp(json_string_value(json_array_get(in, k)) ? json_string_value(json_array_get(in, k)) : "", out_w))
                json_array_set_new(in, k, json_string(ref));
    }
    json_object_del(hw, out_w);
    return 0;
}

/* The block graphs parsed, by embedded file (their data never changes): a plan search loads
 * the same graph ~5 times per candidate (the check, the parameter counts, the generator), and
 * libyaml's parse (twice: the depth check, the events) was ~0.4 ms of a candidate's ~1 ms
 * (s35). Each load gets a deep copy (the loader edits the tree: a tied table). Shared by the
 * search's threads under the lock; the trees live to the exit. */
enum { ROOT_CACHE = 16 };
static struct {
    const etk_embedded *e;
    json_t *root;
} root_cache[ROOT_CACHE];
static pthread_mutex_t root_cache_mu = PTHREAD_MUTEX_INITIALIZER;

/* the cache's slot of e, or the first free one; -1: full (under root_cache_mu) */
static int root_slot(const etk_embedded *e)
{
    for (int i = 0; i < ROOT_CACHE; i++)
        if (!root_cache[i].e || root_cache[i].e == e)
            return i;
    return -1;
}

static int load_root(const etk_embedded *e, json_t **out, etk_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&root_cache_mu);
    int i = root_slot(e);
    if (i >= 0 && root_cache[i].e) {
        *out = json_deep_copy(root_cache[i].root);
        pthread_mutex_unlock(&root_cache_mu);
        return *out ? 0 : etk_err(err, ETK_ENOMEM, "%s: out of memory", e->name);
    }
    pthread_mutex_unlock(&root_cache_mu);
    int rc = etk_yaml_to_json((const char *)e->data, e->len, e->name, out, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&root_cache_mu);
    i = root_slot(e);
    json_t *c = i >= 0 && !root_cache[i].e ? json_deep_copy(*out) : NULL; /* else full, or cached meanwhile */
    if (c) {
        root_cache[i].root = c;
        root_cache[i].e = e;
    }
    pthread_mutex_unlock(&root_cache_mu);
    return 0;
}

int etk_graph_load(const etk_model *m, int64_t batch, etk_graph **out, etk_error *err)
{
    *out = NULL;
    char rel[64];
    snprintf(rel, sizeof rel, "models/blocks/%s.yaml", m->arch);
    const etk_embedded *e = etk_preset_file(rel);
    if (!e)
        return etk_err(err, ETK_ENOTFOUND, "model %s: no block graph for arch '%s' (%s)", m->name, m->arch, rel);
    json_t *root;
    int rc = load_root(e, &root, err);
    if (rc)
        return rc;
    etk_graph *g = calloc(1, sizeof *g);
    g->arena = etk_arena_new(0);
    g->file = e->name;
    g->layers = m->layers;
    g->batch = batch;
    g->seq = m->seq;
    g->topk = m->topk;
    g->experts = m->experts;
    g->t = etk_arena_alloc(g->arena, sizeof(gtensor) * G_MAX_TENSORS);
    loader L = {g, e->name, err, m, batch};
    const char *dk;
    json_t *dv;
    json_object_foreach(json_object_get(root, "dims"), dk, dv) {
        char where[64];
        snprintf(where, sizeof where, "%s: dims.%s", e->name, dk);
        int c = dk[0] - 'a';
        if (strlen(dk) != 1 || c < 0 || c >= G_MAX_DIMS) {
            rc = etk_err(err, ETK_EFORMAT, "%s: dimension names are single letters a-z", where);
            goto out;
        }
        char num[32];
        const char *s = json_string_value(dv);
        if (json_is_integer(dv)) {
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(dv));
            s = num;
        }
        if (!s) {
            rc = etk_err(err, ETK_EFORMAT, "%s: expected an expression", where);
            goto out;
        }
        if ((rc = eval_expr(s, m, batch, where, &g->dim[c], err)))
            goto out;
    }
    json_t *st = json_object_get(root, "stream");
    const char *sq = json_string_value(json_object_get(st, "seq"));
    if ((rc = parse_dims(&L, json_string_value(json_object_get(st, "dims")), "stream.dims", g->stream,
                         &g->stream_nd)))
        goto out;
    if (!sq || sq[0] < 'a' || sq[0] > 'z') {
        rc = etk_err(err, ETK_EFORMAT, "%s: stream.seq: expected the sequence dimension letter", e->name);
        goto out;
    }
    g->stream_seq = sq[0] - 'a';
    json_t *secs = json_object_get(root, "sections");
    if (m->tie_embeddings && (rc = tie_head(e->name, secs, err)))
        goto out;
    for (int s = 0; s < G_N_SEC; s++)
        if ((rc = load_section(&L, s, json_object_get(secs, sec_names[s]))))
            goto out;
    json_t *dense = json_object_get(secs, sec_names[G_SEC_DENSE]);
    if (dense && (rc = load_section(&L, G_SEC_DENSE, dense)))
        goto out;
    if (m->dense_layers > 0 && !dense) {
        rc = etk_err(err, ETK_EINVAL, "model %s: dense_layers %" PRId64 " but %s has no dense_layer section",
                     m->name, m->dense_layers, e->name);
        goto out;
    }
    /* the decode forms of the layer (dense layer): the same weights computed another way */
    for (int s = G_SEC_DECODE; s <= G_SEC_DECODE_DENSE; s++) {
        json_t *js = json_object_get(secs, sec_names[s]);
        int of = s == G_SEC_DECODE ? G_SEC_LAYER : G_SEC_DENSE;
        if (js && (rc = load_section(&L, s, js)))
            goto out;
        if (js && (rc = same_weights(&L, s, of)))
            goto out;
    }
    /* every tensor's element count fits with room for the products formed from it downstream
     * (FLOPs, bytes, times layers), so etk_graph_elems never wraps */
    for (int i = 0; i < g->nt && !rc; i++) {
        int64_t n = 1;
        bool ok = true;
        for (int k = 0; k < g->t[i].nd && ok; k++)
            ok = etk_mul_i64(n, g->dim[g->t[i].dims[k]], &n);
        if (!ok || n > ETK_MAX_TENSOR_ELEMS)
            rc = etk_err(err, ETK_EINVAL,
                         "model %s: tensor %s has %s%.3g elements at batch %" PRId64 " (at most 2^52 = %.3g): "
                         "the dimensions or the batch are too large",
                         m->name, g->t[i].name, ok ? "" : "more than ", ok ? (double)n : 9.22e18, batch,
                         (double)ETK_MAX_TENSOR_ELEMS);
    }
out:
    json_decref(root);
    if (rc) {
        etk_graph_free(g);
        return rc;
    }
    *out = g;
    return 0;
}

void etk_graph_free(etk_graph *g)
{
    if (!g)
        return;
    etk_arena_free(g->arena);
    free(g);
}
